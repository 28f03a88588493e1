"""Peers of the native protocol that are not hurray-python (ADR-023's three pairs).

c_peer/          a C extension built on hurray-ffi alone (the "hurray-ffi consumer")
ctypes_binding/  a binding on hurray-ffi that never imports hurray ("another binding")
rust_peer.py     the Python half of rust-peer: the capsule around the Rust binding's
                 cdylib (bindings/rust/examples/rust_peer, built by cargo)
build.py         compiles the C peer, linked to the installed libhurray or with its
                 own hidden static copy of native/src
cases.py         the tensors every producer makes and every consumer must read back
adapters.py      one produce / take / report / release interface over all peers
"""
