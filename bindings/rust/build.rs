//! Finds hurray.h and libhurray through the installed Python package:
//! `$HURRAY_PYTHON -m hurray --cflags --libs` (default: the first `python3`
//! on PATH), links the library and sets an rpath so that tests and examples
//! run without LD_LIBRARY_PATH. The include directory is passed to the
//! crate's own tests as HURRAY_INCLUDE_DIR (the header-drift test reads it).
//! Crates that depend on this one get both folders in their own build
//! scripts, as DEP_HURRAY_LIB_DIR and DEP_HURRAY_INCLUDE.
use std::env;
use std::process::{exit, Command};

fn main() {
    if let Err(message) = run() {
        eprintln!("error: hurray build script: {message}");
        exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-env-changed=HURRAY_PYTHON");
    println!("cargo:rerun-if-changed=build.rs");
    let python = env::var("HURRAY_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = Command::new(&python)
        .args(["-m", "hurray", "--cflags", "--libs"])
        .output()
        .map_err(|e| format!("cannot run `{python} -m hurray`: {e} (set HURRAY_PYTHON)"))?;
    if !output.status.success() {
        return Err(format!(
            "`{python} -m hurray --cflags --libs` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let flags = String::from_utf8(output.stdout).map_err(|e| format!("flags are not UTF-8: {e}"))?;
    let (mut include, mut lib_dir, mut linked) = (None, None, false);
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            include = Some(dir.to_string());
        } else if let Some(dir) = flag.strip_prefix("-L") {
            lib_dir = Some(dir.to_string());
        } else if flag == "-lhurray" {
            linked = true;
        }
    }
    let include = include.ok_or("no -I flag in the package's --cflags")?;
    let lib_dir = lib_dir.ok_or("no -L flag in the package's --libs")?;
    if !linked {
        return Err("no -lhurray in the package's --libs".to_string());
    }
    println!("cargo:rerun-if-changed={include}/hurray.h");
    println!("cargo:rerun-if-changed={include}/hurray_io.h");
    println!("cargo:rerun-if-changed={lib_dir}/libhurray.so");
    println!("cargo:rustc-link-search=native={lib_dir}");
    println!("cargo:rustc-link-lib=dylib=hurray");
    // Every binary, test, example and cdylib of this package finds libhurray
    // where the Python package keeps it, as `--libs` says.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
    println!("cargo:rustc-env=HURRAY_INCLUDE_DIR={include}");
    println!("cargo:rustc-env=HURRAY_LIB_DIR={lib_dir}");
    println!("cargo:rustc-env=HURRAY_PYTHON_USED={python}");
    // For the build scripts of crates that depend on this one (links = "hurray"):
    // an rpath set here covers this package's own programs only.
    println!("cargo:lib_dir={lib_dir}");
    println!("cargo:include={include}");
    Ok(())
}
