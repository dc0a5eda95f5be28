//! The house's shape, checked from the code's own `use` lines and paths: no module imports one
//! that imports it back (at any level: the files and folders side by side in one folder), in
//! the server (`src/`) or the clients (`client/src/`); and nothing below the HTTP layer (the
//! store, the model, metrics, errors, configuration) reaches up into `http`.
//!
//! A folder's `mod.rs` (and the crate root) is the folder's face: it declares and re-exports
//! its children, which may name what it re-exports; its arrows are not counted. Comments and
//! `#[cfg(test)] mod tests` are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules of the server that stand below `http` and must never import it.
const BELOW_HTTP: [&str; 5] = ["store", "model", "metrics", "error", "config"];

#[test]
fn the_server_has_no_import_cycle() {
    let house = House::read(&root().join("src"));
    assert_eq!(house.cycles(), Vec::<String>::new());
}

#[test]
fn the_clients_have_no_import_cycle() {
    let house = House::read(&root().join("client/src"));
    assert_eq!(house.cycles(), Vec::<String>::new());
}

#[test]
fn nothing_below_http_imports_it() {
    let house = House::read(&root().join("src"));
    let mut wrong = Vec::new();
    for (file, targets) in &house.arrows {
        let top = file
            .split('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".rs");
        if !BELOW_HTTP.contains(&top) {
            continue;
        }
        for target in targets {
            if target.starts_with("http/") || target == "http.rs" {
                wrong.push(format!("{file} -> {target}"));
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}

/// The hub hands each stream a ticket's state and the HTTP face renders it (`http/shown.rs`):
/// nothing under `src/hub/` holds the pass keys, signs a pass or builds what a fan is shown.
#[test]
fn the_hub_holds_no_keys_and_renders_nothing() {
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src/hub")) {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for word in ["Keyring", "sign_pass", "Shown", "PassKey"] {
                if code.contains(word) {
                    wrong.push(format!("{}:{}: {word}", file.display(), n + 1));
                }
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The checker itself finds what it is for.
#[test]
fn a_cycle_and_a_face_are_told_apart() {
    let dir = std::env::temp_dir().join(format!("architecture-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write(
        "a.rs",
        "use crate::b::B;\n// use crate::c::C; (a comment)\n",
    );
    write("b/mod.rs", "mod inner;\npub use self::inner::B;\n");
    write("b/inner.rs", "use super::super::a::A;\npub struct B;\n");
    write("c.rs", "use crate::{a::A, b::B};\n");
    let house = House::read(&dir);
    assert_eq!(house.cycles(), vec![". : a <-> b".to_string()]);
    write(
        "a.rs",
        "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
    );
    assert_eq!(House::read(&dir).cycles(), Vec::<String>::new());
    fs::remove_dir_all(&dir).unwrap();
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A crate's files (paths from its root, `a/b.rs`) and the files each one imports.
struct House {
    files: BTreeSet<String>,
    arrows: BTreeMap<String, BTreeSet<String>>,
}

impl House {
    fn read(root: &Path) -> House {
        let mut texts = BTreeMap::new();
        collect(root, root, &mut texts);
        let files: BTreeSet<String> = texts.keys().cloned().collect();
        let mut house = House {
            files,
            arrows: BTreeMap::new(),
        };
        for (file, text) in &texts {
            let module = module_of(file);
            let mut targets = BTreeSet::new();
            for path in paths(&code_of(text)) {
                if let Some(target) = house.resolve(&module, &path)
                    && target != *file
                {
                    targets.insert(target);
                }
            }
            house.arrows.insert(file.clone(), targets);
        }
        house
    }

    /// The file that defines `path` (`crate`/`super`/`self` first), seen from `module`: the
    /// longest prefix of it that is a module of a file.
    fn resolve(&self, module: &[String], path: &[String]) -> Option<String> {
        let mut full: Vec<String> = Vec::new();
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => rest = &path[1..],
            Some("self") => {
                full.extend_from_slice(module);
                rest = &path[1..];
            }
            Some("super") => {
                full.extend_from_slice(module);
                while rest.first().map(String::as_str) == Some("super") {
                    full.pop();
                    rest = &rest[1..];
                }
            }
            _ => return None,
        }
        full.extend_from_slice(rest);
        (0..=full.len()).rev().find_map(|n| {
            let stem = full[..n].join("/");
            let candidates = if n == 0 {
                vec!["lib.rs".to_string(), "main.rs".to_string()]
            } else {
                vec![format!("{stem}.rs"), format!("{stem}/mod.rs")]
            };
            candidates.into_iter().find(|c| self.files.contains(c))
        })
    }

    /// Every folder's children (files and subfolders, each one unit) that import each other
    /// in a loop: `folder : a <-> b` (or `a -> b -> c -> a`).
    fn cycles(&self) -> Vec<String> {
        let folders: BTreeSet<String> = self.files.iter().map(|f| folder_of(f)).collect();
        let mut found = Vec::new();
        for folder in folders {
            let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (file, targets) in &self.arrows {
                let Some(from) = unit_of(file, &folder) else {
                    continue;
                };
                for target in targets {
                    if let Some(to) = unit_of(target, &folder)
                        && to != from
                    {
                        graph.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
            for component in strongly_connected(&graph) {
                let name = if folder.is_empty() { "." } else { &folder };
                found.push(format!("{name} : {}", component.join(" <-> ")));
            }
        }
        found
    }
}

fn collect(root: &Path, dir: &Path, into: &mut BTreeMap<String, String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            // A file of tests beside the code it tests is a test, not a room.
            if !name.ends_with("/tests.rs") && name != "tests.rs" {
                into.insert(name, fs::read_to_string(&path).unwrap());
            }
        }
    }
}

/// The module path of a file: `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The folder a file's unit sits in: a face (`a/mod.rs`) belongs to its folder's parent.
fn folder_of(file: &str) -> String {
    let module = module_of(file);
    module[..module.len().saturating_sub(1)].join("/")
}

/// Which child of `folder` the file is part of (`None`: outside it, or its face).
fn unit_of(file: &str, folder: &str) -> Option<String> {
    let rest = if folder.is_empty() {
        file
    } else {
        file.strip_prefix(folder)?.strip_prefix('/')?
    };
    if matches!(rest, "mod.rs" | "lib.rs" | "main.rs") {
        return None;
    }
    Some(rest.split('/').next()?.trim_end_matches(".rs").to_string())
}

/// The code without its comments and without its `#[cfg(test)] mod tests`.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut code = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        // A `//` inside a string (a URL) cuts nothing that names a module.
        code.push_str(line.split(" //").next().unwrap_or_default());
        code.push('\n');
    }
    code
}

/// Every path that starts with `crate`, `super` or `self`, with `{…}` groups spread out.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let at_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if at_word {
            for head in ["crate", "super", "self"] {
                let word: String = chars[i..].iter().take(head.len()).collect();
                let after = chars.get(i + head.len()..i + head.len() + 2);
                if word == head && after == Some(&[':', ':']) {
                    let (end, mut spread) = path_at(&chars, i, Vec::new());
                    found.append(&mut spread);
                    i = end;
                    break;
                }
            }
        }
        i += 1;
    }
    found
}

/// The path starting at `i` under `prefix`, spread over its groups; and where it ends.
fn path_at(chars: &[char], mut i: usize, prefix: Vec<String>) -> (usize, Vec<Vec<String>>) {
    let mut path = prefix;
    let mut found = Vec::new();
    loop {
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        if i > start {
            path.push(chars[start..i].iter().collect());
        }
        if chars.get(i..i + 2) == Some(&[':', ':']) {
            i += 2;
            if chars.get(i) == Some(&'{') {
                i += 1;
                loop {
                    while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                        i += 1;
                    }
                    if i >= chars.len() || chars[i] == '}' {
                        break;
                    }
                    let (end, mut spread) = path_at(chars, i, path.clone());
                    found.append(&mut spread);
                    // Past `as name` and anything else up to the next item.
                    i = end;
                    while i < chars.len() && chars[i] != ',' && chars[i] != '}' {
                        i += 1;
                    }
                }
                return (i + 1, found);
            }
            continue;
        }
        found.push(path);
        return (i, found);
    }
}

/// Tarjan's strongly connected components of more than one unit, each sorted.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w.as_str()]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w.as_str()) {
                    let low = self.low[v].min(self.index[w.as_str()]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}
