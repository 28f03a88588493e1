"""Run safetensors' own Python tests with ``safetensors.numpy`` routed through Hurray (ADR-064).

    python tools/safetensors_suite.py PATH/TO/safetensors [pytest args...]

PATH is a checkout of huggingface/safetensors at the release that is
installed (its tests follow their own release's API). The script runs
``bindings/python/tests/test_simple.py`` twice in child processes: once as
it is, once with a pytest plugin (written to a temporary folder, never into
the checkout) that replaces ``safetensors.numpy``'s ``save``, ``save_file``,
``load`` and ``load_file`` with Hurray's before the tests are collected. It
prints both summaries and exits 0 when every test that passes with
safetensors passes through Hurray too. CI cannot fetch the suite; the same
cases live on as our own tests in tests/test_formats_safetensors_compat.py.
"""
import os
import re
import subprocess
import sys
import tempfile

PLUGIN = '''
import numpy as np

import hurray


def _arrays(mapping):
    return {name: np.asarray(mapping[name]) for name in mapping}


def save(tensor_dict, metadata=None):
    return hurray.save_safetensors_bytes(tensor_dict, metadata=metadata)


def save_file(tensor_dict, filename, metadata=None):
    hurray.save_safetensors(filename, tensor_dict, metadata=metadata)


def load(data):
    return _arrays(hurray.load_safetensors_bytes(data))


def load_file(filename):
    with hurray.load_safetensors(filename) as f:
        return _arrays(f)


def pytest_configure(config):
    import safetensors.numpy as target

    for name in ("save", "save_file", "load", "load_file"):
        setattr(target, name, globals()[name])
'''


def _run(tests: str, extra: list[str], plugin_dir: str | None) -> tuple[set[str], str]:
    env = dict(os.environ)
    args = [sys.executable, "-m", "pytest", tests, "-rA", "-q", "-p", "no:cacheprovider", *extra]
    if plugin_dir is not None:
        env["PYTHONPATH"] = plugin_dir + os.pathsep + env.get("PYTHONPATH", "")
        args += ["-p", "hurray_route"]
    with tempfile.TemporaryDirectory() as cwd:  # the tests write files into their working directory
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    passed = set(re.findall(r"^PASSED (\S+)", done.stdout, re.M))
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-400:]
    return passed, summary


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    tests = os.path.join(os.path.abspath(argv[0]), "bindings", "python", "tests", "test_simple.py")
    if not os.path.isfile(tests):
        print(f"no {tests}: give the path of a safetensors checkout", file=sys.stderr)
        return 2
    plain, plain_summary = _run(tests, argv[1:], None)
    with tempfile.TemporaryDirectory() as plugin_dir:
        with open(os.path.join(plugin_dir, "hurray_route.py"), "w") as f:
            f.write(PLUGIN)
        routed, routed_summary = _run(tests, argv[1:], plugin_dir)
    print(f"safetensors alone:          {plain_summary}")
    print(f"through Hurray:             {routed_summary}")
    lost = sorted(plain - routed)
    for name in lost:
        print(f"passes with safetensors, not through Hurray: {name}")
    return 1 if lost or not plain else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
