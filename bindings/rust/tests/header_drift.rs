//! src/sys.rs against the installed hurray.h and hurray_io.h.
//!
//! Each Rust declaration is turned back into C and compiled after the
//! headers with -Werror: a parameter or return type that differs is a
//! conflicting redeclaration, a function the headers do not declare is an
//! undeclared identifier, and a constant that differs fails a
//! _Static_assert. Every function the headers declare must be declared in
//! sys.rs too. The last tests mutate sys.rs in memory and prove each kind of
//! drift is caught.
use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const SYS_RS: &str = include_str!("../src/sys.rs");
const INCLUDE_DIR: &str = env!("HURRAY_INCLUDE_DIR");
const HEADERS: [&str; 2] = ["hurray.h", "hurray_io.h"];

#[derive(Debug)]
struct Function {
    name: String,
    ret: String,
    params: Vec<String>,
}

/// `source` without `//` comments.
fn strip_comments(source: &str) -> String {
    source
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits at commas outside (), <> (an arrow's '>' is not a bracket).
fn split_top(text: &str) -> Vec<String> {
    let text = text.replace("->", "\u{2192}");
    let (mut parts, mut depth, mut current) = (Vec::new(), 0i32, String::new());
    for ch in text.chars() {
        match ch {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(current.replace('\u{2192}', "->").trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    let last = current.replace('\u{2192}', "->").trim().to_string();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

/// The C spelling of a Rust type from sys.rs (an abstract declarator).
fn c_type(rust: &str) -> Result<String, String> {
    let rust = rust.trim();
    if let Some(inner) = rust.strip_prefix("*const ") {
        return Ok(format!("{} const *", c_type(inner)?));
    }
    if let Some(inner) = rust.strip_prefix("*mut ") {
        return Ok(format!("{} *", c_type(inner)?));
    }
    if let Some(inner) = rust.strip_prefix("Option<unsafe extern \"C\" fn(").and_then(|s| s.strip_suffix('>')) {
        let close = inner.rfind(')').ok_or_else(|| format!("unreadable callback type {rust}"))?;
        let params = c_params(&inner[..close])?;
        let ret = match inner[close + 1..].trim().strip_prefix("->") {
            Some(ret) => c_type(ret)?,
            None => "void".to_string(),
        };
        return Ok(format!("{ret} (*)({params})"));
    }
    let scalar = match rust {
        "u8" => "uint8_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "c_int" => "int",
        "c_char" => "char",
        "c_void" => "void",
        named if named.starts_with("Hurray") && named.chars().all(|c| c.is_ascii_alphanumeric()) => named,
        other => return Err(format!("sys.rs uses a type the drift test cannot spell in C: {other}")),
    };
    Ok(scalar.to_string())
}

/// `name: Type, ...` as C parameter types; "void" for none.
fn c_params(params: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for param in split_top(params) {
        let (_, ty) = param.split_once(':').ok_or_else(|| format!("parameter without a type: {param}"))?;
        out.push(c_type(ty)?);
    }
    Ok(if out.is_empty() { "void".to_string() } else { out.join(", ") })
}

struct Declarations {
    functions: Vec<Function>,
    constants: Vec<(String, String)>,
    callbacks: Vec<(String, String)>,
}

fn parse(sys: &str) -> Result<Declarations, String> {
    let code = strip_comments(sys);
    let start = code.find("extern \"C\" {").ok_or("sys.rs has no extern \"C\" block")?;
    let body_start = start + "extern \"C\" {".len();
    let end = code[body_start..].find("\n}").ok_or("the extern block is not closed")? + body_start;
    let mut functions = Vec::new();
    for item in code[body_start..end].split(';') {
        let item = squash(item);
        if item.is_empty() {
            continue;
        }
        let rest = item.strip_prefix("pub fn ").ok_or_else(|| format!("not a `pub fn`: {item}"))?;
        let open = rest.find('(').ok_or_else(|| format!("no parameter list: {item}"))?;
        let name = rest[..open].trim().to_string();
        // The parameter list ends at the ')' that balances the first '('.
        let (mut depth, mut close) = (0i32, None);
        for (i, ch) in rest.char_indices().skip(open) {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.ok_or_else(|| format!("unbalanced parameters: {item}"))?;
        let mut params = Vec::new();
        for p in split_top(&rest[open + 1..close]) {
            let (_, ty) = p.split_once(':').ok_or_else(|| format!("parameter without a type in {name}: {p}"))?;
            params.push(c_type(ty)?);
        }
        let ret = match rest[close + 1..].trim().strip_prefix("->") {
            Some(ret) => c_type(ret)?,
            None => "void".to_string(),
        };
        functions.push(Function { name, ret, params });
    }
    let mut constants = Vec::new();
    let mut callbacks = Vec::new();
    for item in code[..start].split(';') {
        // An item may follow a struct (whose `[u8; 0]` split it): read from its keyword.
        let item = squash(item);
        let from = |keyword: &str| item.find(keyword).map(|at| &item[at + keyword.len()..]);
        if let Some(rest) = from("pub const ") {
            let (name, value) = rest.split_once('=').ok_or_else(|| format!("unreadable constant: {item}"))?;
            let name = name.split(':').next().unwrap_or("").trim().to_string();
            constants.push((name, value.trim().to_string()));
        } else if let Some(rest) = from("pub type ") {
            let (name, ty) = rest.split_once('=').ok_or_else(|| format!("unreadable type: {item}"))?;
            if ty.trim().starts_with("Option<") {
                callbacks.push((name.trim().to_string(), c_type(ty)?));
            }
        }
    }
    Ok(Declarations { functions, constants, callbacks })
}

/// The function names the headers declare (lines that start a prototype).
fn header_functions() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for header in HEADERS {
        let path = PathBuf::from(INCLUDE_DIR).join(header);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for line in text.lines() {
            let line = line.trim_start();
            if line.starts_with("/*") || line.starts_with('*') || line.starts_with('#') || line.starts_with("typedef") {
                continue;
            }
            if let Some(at) = line.find("hurray_") {
                let rest = &line[at..];
                let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                if rest[end..].starts_with('(') && at > 0 {
                    names.insert(rest[..end].to_string());
                }
            }
        }
    }
    names
}

fn c_source(decls: &Declarations) -> String {
    let mut c = String::from("#include \"hurray.h\"\n#include \"hurray_io.h\"\n\n");
    // First a use of every name, before any redeclaration of ours: a name
    // the headers lack is an undeclared identifier.
    c.push_str("void hurray_rust_uses(void);\nvoid hurray_rust_uses(void)\n{\n");
    for f in &decls.functions {
        c.push_str(&format!("    (void)&{};\n", f.name));
    }
    c.push_str("}\n\n");
    for f in &decls.functions {
        let params = if f.params.is_empty() { "void".to_string() } else { f.params.join(", ") };
        c.push_str(&format!("{} {}({});\n", f.ret, f.name, params));
    }
    for (name, value) in &decls.constants {
        c.push_str(&format!("_Static_assert({name} == {value}, \"sys.rs: {name}\");\n"));
    }
    for (name, ty) in &decls.callbacks {
        c.push_str(&format!(
            "_Static_assert(__builtin_types_compatible_p({name}, {ty}), \"sys.rs: {name}\");\n"
        ));
    }
    c
}

/// Compiles the C form of `sys` after the headers; Err holds the compiler's complaint.
fn compile(sys: &str, tag: &str) -> Result<(), String> {
    let decls = parse(sys)?;
    let dir = std::env::temp_dir().join(format!("hurray-rust-drift-{}-{tag}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("sys_check.c");
    fs::write(&src, c_source(&decls)).map_err(|e| e.to_string())?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o"])
        .arg(dir.join("sys_check.o"))
        .arg(format!("-I{INCLUDE_DIR}"))
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run the C compiler: {e}"))?;
    let _ = fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn missing_from(sys: &str) -> Vec<String> {
    let declared: BTreeSet<String> = match parse(sys) {
        Ok(d) => d.functions.into_iter().map(|f| f.name).collect(),
        Err(e) => panic!("{e}"),
    };
    header_functions().difference(&declared).cloned().collect()
}

#[test]
fn sys_rs_compiles_against_the_headers() {
    let decls = parse(SYS_RS).unwrap_or_else(|e| panic!("{e}"));
    // The parser saw everything (a parser that skipped items would prove nothing).
    assert_eq!(decls.functions.len(), header_functions().len());
    assert_eq!(decls.callbacks.len(), 2, "HurrayWriteFn and HurrayReadFn");
    assert_eq!(decls.constants.len(), SYS_RS.matches("pub const ").count());
    if let Err(e) = compile(SYS_RS, "real") {
        panic!("src/sys.rs drifts from the headers:\n{e}");
    }
}

#[test]
fn sys_rs_declares_every_header_function() {
    let headers = header_functions();
    assert!(headers.len() > 50, "the header scan found only {headers:?}");
    assert!(headers.contains("hurray_reader_open") && headers.contains("hurray_tensor_context_abi_version"));
    let missing = missing_from(SYS_RS);
    assert!(missing.is_empty(), "declared in the headers but not in src/sys.rs: {missing:?}");
}

fn mutated(from: &str, to: &str) -> String {
    assert_eq!(SYS_RS.matches(from).count(), 1, "the mutation site {from:?} must be unique in sys.rs");
    SYS_RS.replacen(from, to, 1)
}

#[test]
fn a_parameter_type_that_drifts_is_caught() {
    let sys = mutated("index: u64,\n        out: *mut *const HurrayBuffer", "index: u32,\n        out: *mut *const HurrayBuffer");
    assert!(compile(&sys, "param").is_err());
}

#[test]
fn a_lost_const_is_caught() {
    let sys = mutated("hurray_buffer_list_len(list: *const", "hurray_buffer_list_len(list: *mut");
    assert!(compile(&sys, "const").is_err());
}

#[test]
fn a_return_type_that_drifts_is_caught() {
    let sys = mutated("pub fn hurray_io_version() -> u32;", "pub fn hurray_io_version() -> u64;");
    assert!(compile(&sys, "ret").is_err());
}

#[test]
fn a_callback_that_drifts_is_caught() {
    let sys = mutated(
        "owner_release: Option<unsafe extern \"C\" fn(owner: *mut c_void)>",
        "owner_release: Option<unsafe extern \"C\" fn(owner: *const c_void)>",
    );
    assert!(compile(&sys, "callback").is_err());
    let sys = mutated("data: *const c_void, len: u64) -> c_int>", "data: *const c_void, len: u32) -> c_int>");
    assert!(compile(&sys, "typedef").is_err());
}

#[test]
fn a_name_the_headers_lack_is_caught() {
    let sys = mutated("pub fn hurray_reader_count(", "pub fn hurray_reader_len(");
    assert!(compile(&sys, "name").is_err());
    assert_eq!(missing_from(&sys), vec!["hurray_reader_count".to_string()]);
}

#[test]
fn a_constant_that_drifts_is_caught() {
    let sys = mutated("HURRAY_TENSOR_CONTEXT_MAGIC: u32 = 0x48525443", "HURRAY_TENSOR_CONTEXT_MAGIC: u32 = 0x48525444");
    assert!(compile(&sys, "constant").is_err());
}
