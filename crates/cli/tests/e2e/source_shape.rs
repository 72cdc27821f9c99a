//! The shape of the code (docs/architecture.md, "Shape of the code"):
//!
//! - no file-level import cycles within a crate: no file uses an item of
//!   another file of its crate that (directly or through others) uses an
//!   item of the first;
//! - no function in `crates/*/src` longer than [`MAX_FN_LINES`] lines, test
//!   code aside, unless a comment `// long: <reason>` sits just above it.
//!
//! The scanner is deliberately simple: comments, strings and character
//! literals are blanked, the rest is split into tokens, `#[cfg(test)]`
//! items are dropped, and paths are resolved by the module tree that the
//! `mod` declarations describe. Its own unit tests are at the end.
//!
//! What it does not see: method calls (`x.f()` is not resolved to the file
//! whose `impl` block defines `f`) and macros' expansions. Keep an `impl`
//! block that adds methods to another file's type on the side of the
//! dependency (as `stats::forecast` does: `Measured` and the forecasts
//! read directly from it in `measured.rs`, the ones that need more adding
//! their methods in their own files), so that the imports tell the truth.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The longest function allowed without a written reason, in lines from
/// the line of `fn` to the line of its closing brace.
const MAX_FN_LINES: usize = 150;

/// Functions still over the limit whose split another part of issue 37
/// owns: (file under `crates/`, function, owner). Each entry must still be
/// over the limit (the test says when one can go); the list is to be empty.
const NOT_YET_SPLIT: &[(&str, &str, &str)] = &[];

/// File-level cycles not yet broken: (crate, the files of the cycle as the
/// test names them, owner). A cycle found must lie within one of these
/// (breaking part of one is fine); each entry must still be found.
const NOT_YET_BROKEN: &[(&str, &str, &str)] = &[];

// ---------------------------------------------------------------- tests

#[test]
fn no_file_level_import_cycles() {
    let _g = crate::common::serial();
    let mut report = String::new();
    let mut seen = BTreeSet::new();
    for krate in crates() {
        let tree = ModuleTree::load(&krate.src);
        for (files, cycle) in tree.cycles() {
            let known = NOT_YET_BROKEN.iter().find(|(c, listed, _)| {
                *c == krate.name && files.iter().all(|f| listed.split(" ↔ ").any(|l| l == f))
            });
            match known {
                Some((_, listed, owner)) => {
                    eprintln!("not yet broken ({owner}): crate {}: {cycle}", krate.name);
                    seen.insert((krate.name.clone(), listed.to_string()));
                }
                None => {
                    let _ = writeln!(report, "crate {}: {}", krate.name, cycle);
                }
            }
        }
    }
    for (krate, listed, owner) in NOT_YET_BROKEN {
        if !seen.contains(&(krate.to_string(), listed.to_string())) {
            let _ = writeln!(
                report,
                "crate {krate}: {listed} ({owner}) is no longer a cycle: remove it from NOT_YET_BROKEN"
            );
        }
    }
    assert!(
        report.is_empty(),
        "file-level import cycles (break each, e.g. by moving what both files \
         use into a file of its own):\n{report}"
    );
}

#[test]
fn no_long_functions_without_a_reason() {
    let _g = crate::common::serial();
    let mut report = String::new();
    let mut still_long = BTreeSet::new();
    for krate in crates() {
        let tree = ModuleTree::load(&krate.src);
        for (file, text) in tree.non_test_files() {
            let rel = format!("{}/src/{}", krate.name, file.display());
            for f in long_functions(text) {
                if f.reason.is_some() {
                    continue;
                }
                if let Some((_, _, owner)) = NOT_YET_SPLIT
                    .iter()
                    .find(|(p, name, _)| *p == rel && *name == f.name)
                {
                    eprintln!(
                        "not yet split ({owner}): {rel}: {} ({} lines)",
                        f.name, f.lines
                    );
                    still_long.insert((rel.clone(), f.name.clone()));
                    continue;
                }
                let _ = writeln!(
                    report,
                    "crates/{rel}:{}: fn {} is {} lines (limit {MAX_FN_LINES}): split it, \
                     or write `// long: <reason>` just above it",
                    f.line, f.name, f.lines
                );
            }
        }
    }
    for (path, name, owner) in NOT_YET_SPLIT {
        if !still_long.contains(&(path.to_string(), name.to_string())) {
            let _ = writeln!(
                report,
                "crates/{path}: fn {name} ({owner}) is no longer over the limit: \
                 remove it from NOT_YET_SPLIT"
            );
        }
    }
    assert!(report.is_empty(), "long functions:\n{report}");
}

// ---------------------------------------------------------------- crates

struct Crate {
    name: String,
    src: PathBuf,
}

fn crates() -> Vec<Crate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<Crate> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| Crate {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            src: p.join("src"),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 13, "the workspace's crates under {root:?}");
    out
}

// ---------------------------------------------------------------- lexing

/// The source with comments, string and character literals replaced by
/// spaces (line breaks kept, so lines still count the same).
fn blank(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(c.len());
    let mut i = 0;
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    // Blanks c[from..to] into `out` (keeping line breaks).
    let push_blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for &ch in &c[from..to.min(c.len())] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        let prev_ident = i > 0 && is_ident(c[i - 1]);
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            push_blank(&mut out, i, end);
            i = end;
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            let mut k = i;
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            push_blank(&mut out, i, k);
            i = k;
        } else if !prev_ident && raw_string_start(&c, i).is_some() {
            let (hashes, quote) = raw_string_start(&c, i).unwrap();
            let mut k = quote + 1;
            while k < c.len() {
                if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            out.extend(&c[i..quote]);
            push_blank(&mut out, quote, k);
            i = k.min(c.len());
        } else if at(0) == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            push_blank(&mut out, i, k + 1);
            i = k + 1;
        } else if at(0) == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if at(1) == '\\' {
                (i + 2..c.len()).find(|&k| c[k] == '\'' && k > i + 2)
            } else if at(2) == '\'' {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    push_blank(&mut out, i, e + 1);
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// At `r"`, `r#"`, `br"`, `br#"`: the number of hashes and the index of the
/// opening quote.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut k = i;
    if c.get(k) == Some(&'b') {
        k += 1;
    }
    if c.get(k) != Some(&'r') {
        return None;
    }
    k += 1;
    let mut hashes = 0;
    while c.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    (c.get(k) == Some(&'"')).then_some((hashes, k))
}

#[derive(Clone, Debug, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }
    fn is_ident(&self) -> bool {
        self.text
            .chars()
            .next()
            .is_some_and(|ch| ch.is_alphabetic() || ch == '_')
    }
}

/// Identifiers (and numbers), `::`, and single punctuation characters.
fn tokens(blanked: &str) -> Vec<Token> {
    let c: Vec<char> = blanked.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            // A raw identifier (r#type) is the identifier.
            let mut text: String = c[start..i].iter().collect();
            if text == "r"
                && c.get(i) == Some(&'#')
                && c.get(i + 1).is_some_and(|x| x.is_alphabetic())
            {
                let s = i + 1;
                i = s;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                text = c[s..i].iter().collect();
            }
            out.push(Token { text, line });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Index of the token closing the bracket opened at `open` (`{`, `(`, `[`).
fn matching(t: &[Token], open: usize) -> usize {
    let mut depth = 0i64;
    for (k, tok) in t.iter().enumerate().skip(open) {
        match tok.text.as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    t.len() - 1
}

/// Whether the attribute starting at `#` (index `i`) is `#[cfg(test)]` or
/// `#[cfg(all(test, …))]`; and the index after it.
fn attribute(t: &[Token], i: usize) -> Option<(bool, usize)> {
    if !(t.get(i)?.is("#") && t.get(i + 1)?.is("[")) {
        return None;
    }
    let close = matching(t, i + 1);
    let inner: Vec<&str> = t[i + 2..close].iter().map(|x| x.text.as_str()).collect();
    let test = matches!(inner[..], ["cfg", "(", "test", ")"])
        || matches!(inner[..], ["cfg", "(", "all", "(", "test", ..]);
    Some((test, close + 1))
}

/// The end (exclusive) of the item starting at `i`: after its first `;` or
/// its first `{…}` block at bracket depth 0, whichever comes first.
fn item_end(t: &[Token], i: usize) -> usize {
    let mut k = i;
    while k < t.len() {
        match t[k].text.as_str() {
            ";" => return k + 1,
            "{" => return matching(t, k) + 1,
            "(" | "[" => k = matching(t, k) + 1,
            _ => k += 1,
        }
    }
    t.len()
}

/// The tokens with every `#[cfg(test)]` item left out, and the names of the
/// `#[cfg(test)] mod name;` declarations (files of test code).
fn without_tests(t: &[Token]) -> (Vec<Token>, BTreeSet<String>) {
    let mut out = Vec::with_capacity(t.len());
    let mut test_mods = BTreeSet::new();
    let mut i = 0;
    while i < t.len() {
        match attribute(t, i) {
            Some((true, mut k)) => {
                while let Some((_, next)) = attribute(t, k) {
                    k = next;
                }
                let end = item_end(t, k);
                let words: Vec<&str> = t[k..end].iter().map(|x| x.text.as_str()).collect();
                if let Some(m) = words.iter().position(|w| *w == "mod") {
                    if words.last() == Some(&";") {
                        test_mods.insert(words[m + 1].to_string());
                    }
                }
                i = end;
            }
            _ => {
                out.push(t[i].clone());
                i += 1;
            }
        }
    }
    (out, test_mods)
}

// ---------------------------------------------------------------- functions

#[derive(Debug, PartialEq)]
struct LongFn {
    name: String,
    /// Line of `fn`.
    line: usize,
    lines: usize,
    reason: Option<String>,
}

/// Every function of `src` (test code aside) longer than [`MAX_FN_LINES`].
fn long_functions(src: &str) -> Vec<LongFn> {
    let (t, _) = without_tests(&tokens(&blank(src)));
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for i in 0..t.len() {
        if !(t[i].is("fn") && t.get(i + 1).is_some_and(Token::is_ident)) {
            continue;
        }
        let Some(body) = fn_body(&t, i + 2) else {
            continue;
        };
        let end = matching(&t, body);
        let n = t[end].line - t[i].line + 1;
        if n > MAX_FN_LINES {
            out.push(LongFn {
                name: t[i + 1].text.clone(),
                line: t[i].line,
                lines: n,
                reason: long_reason(&lines, t[i].line),
            });
        }
    }
    out
}

/// The `{` opening the body of the function whose signature starts at `i`
/// (`None` for a declaration without a body).
fn fn_body(t: &[Token], mut i: usize) -> Option<usize> {
    while i < t.len() {
        match t[i].text.as_str() {
            "{" => return Some(i),
            ";" => return None,
            "(" | "[" => i = matching(t, i) + 1,
            _ => i += 1,
        }
    }
    None
}

/// The reason written as `// long: <reason>` among the comment and
/// attribute lines just above line `fn_line` (1-based).
fn long_reason(lines: &[&str], fn_line: usize) -> Option<String> {
    let mut k = fn_line.checked_sub(1)?; // index of the fn's line
    while k > 0 {
        k -= 1;
        let l = lines[k].trim();
        if let Some(reason) = l.strip_prefix("// long:") {
            let reason = reason.trim();
            return (!reason.is_empty()).then(|| reason.to_string());
        }
        let above = l.starts_with("//") || l.starts_with("#[") || l.ends_with(")]");
        if !above {
            return None;
        }
    }
    None
}

// ---------------------------------------------------------------- modules

type ModPath = Vec<String>;

/// A `use` (or the declaration of a module): the name it brings into
/// scope in module `module`, and what it names.
#[derive(Clone, Debug)]
struct Import {
    module: ModPath,
    name: String,
    target: Target,
    /// `pub use` / `pub(crate) use`: a re-export, not a use by the file.
    public: bool,
    line: usize,
    text: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Target {
    /// An absolute path in this crate.
    Internal(ModPath),
    /// Another crate's item, or a name this scanner cannot resolve.
    External,
}

struct SourceFile {
    /// Relative to the crate's src.
    path: PathBuf,
    text: String,
    tokens: Vec<Token>,
    /// Each token's module (the file's, or an inline `mod x { }` in it).
    token_module: Vec<ModPath>,
    imports: Vec<Import>,
}

struct ModuleTree {
    files: Vec<SourceFile>,
    /// Module path → index into `files` (inline modules map to their file).
    modules: BTreeMap<ModPath, usize>,
}

impl ModuleTree {
    fn load(src: &Path) -> ModuleTree {
        let mut tree = ModuleTree {
            files: Vec::new(),
            modules: BTreeMap::new(),
        };
        for root in ["lib.rs", "main.rs"] {
            if src.join(root).is_file() {
                tree.add_file(src, PathBuf::from(root), Vec::new());
            }
        }
        for f in 0..tree.files.len() {
            let found = imports(&tree.files[f], &tree.modules);
            tree.files[f].imports = found;
        }
        tree
    }

    fn add_file(&mut self, src: &Path, rel: PathBuf, module: ModPath) {
        let text = std::fs::read_to_string(src.join(&rel))
            .unwrap_or_else(|e| panic!("{}: {e}", src.join(&rel).display()));
        let (tokens, test_mods) = without_tests(&tokens(&blank(&text)));
        let index = self.files.len();
        let dir = match rel.file_name().unwrap().to_str().unwrap() {
            "lib.rs" | "main.rs" | "mod.rs" => rel.parent().unwrap().to_path_buf(),
            _ => rel.with_extension(""),
        };
        // Inline modules and declared files.
        let mut token_module = Vec::with_capacity(tokens.len());
        let mut stack: Vec<(String, usize)> = Vec::new(); // (name, closing token)
        let mut children = Vec::new();
        for i in 0..tokens.len() {
            while stack.last().is_some_and(|(_, close)| *close < i) {
                stack.pop();
            }
            let mut m = module.clone();
            m.extend(stack.iter().map(|(n, _)| n.clone()));
            if tokens[i].is("mod") && tokens.get(i + 1).is_some_and(Token::is_ident) {
                let name = tokens[i + 1].text.clone();
                let mut child = m.clone();
                child.push(name.clone());
                match tokens.get(i + 2).map(|x| x.text.as_str()) {
                    Some("{") => {
                        self.modules.insert(child, index);
                        stack.push((name, matching(&tokens, i + 2)));
                    }
                    Some(";") if stack.is_empty() && !test_mods.contains(&name) => {
                        children.push((name, child));
                    }
                    _ => {}
                }
            }
            token_module.push(m);
        }
        self.modules.insert(module.clone(), index);
        self.files.push(SourceFile {
            path: rel,
            text,
            tokens,
            token_module,
            imports: Vec::new(),
        });
        for (name, child) in children {
            let file = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ]
            .into_iter()
            .find(|p| src.join(p).is_file())
            .unwrap_or_else(|| panic!("mod {name} of {}", src.join(&dir).display()));
            self.add_file(src, file, child);
        }
    }

    fn non_test_files(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.files
            .iter()
            .map(|f| (f.path.as_path(), f.text.as_str()))
    }

    /// The file an absolute path's item lives in, following `use`s
    /// (re-exports, and a parent's imports its children reach by `super::`).
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        if depth > 16 {
            return None;
        }
        let mut k = path.len();
        while !self.modules.contains_key(&path[..k]) {
            k -= 1; // the root (k = 0) is always a module
        }
        let file = self.modules[&path[..k]];
        let Some(name) = path.get(k) else {
            return Some(file);
        };
        let import = self.files[file]
            .imports
            .iter()
            .find(|i| i.module == path[..k] && &i.name == name);
        match import {
            None => Some(file), // defined there (or reached by a glob)
            Some(Import {
                target: Target::External,
                ..
            }) => None,
            Some(Import {
                target: Target::Internal(t),
                ..
            }) => {
                let mut full = t.clone();
                full.extend_from_slice(&path[k + 1..]);
                self.resolve(&full, depth + 1)
            }
        }
    }

    /// Edges file → file, with the first use that makes each.
    fn edges(&self) -> BTreeMap<(usize, usize), String> {
        let mut edges = BTreeMap::new();
        for (f, file) in self.files.iter().enumerate() {
            let mut add = |target: &[String], line: usize, text: &str| {
                if let Some(g) = self.resolve(target, 0) {
                    if g != f {
                        edges
                            .entry((f, g))
                            .or_insert_with(|| format!("line {line}: {text}"));
                    }
                }
            };
            for i in file.imports.iter().filter(|i| !i.public) {
                if let Target::Internal(t) = &i.target {
                    add(t, i.line, &i.text);
                }
            }
            for (i, path, text) in paths(&file.tokens) {
                let module = &file.token_module[i];
                if let Target::Internal(abs) = absolute(&self.modules, &file.imports, module, &path)
                {
                    add(&abs, file.tokens[i].line, &text);
                }
            }
        }
        edges
    }

    /// Every strongly connected set of more than one file: its files, and
    /// a description naming the use behind each edge.
    fn cycles(&self) -> Vec<(Vec<String>, String)> {
        let edges = self.edges();
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in edges.keys() {
            next[a].push(b);
        }
        strongly_connected(&next)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let names: Vec<String> = c
                    .iter()
                    .map(|&f| self.files[f].path.display().to_string())
                    .collect();
                let mut s = names.join(" ↔ ");
                let files = names;
                for (&(a, b), why) in &edges {
                    if c.contains(&a) && c.contains(&b) {
                        let _ = write!(
                            s,
                            "\n    {} → {} ({why})",
                            self.files[a].path.display(),
                            self.files[b].path.display()
                        );
                    }
                }
                (files, s)
            })
            .collect()
    }
}

/// A path as written in `module` of `file`, made absolute; `External` when
/// it starts with neither `crate`, `self`, `super`, a child module nor a
/// name the module imports from this crate.
fn absolute(
    modules: &BTreeMap<ModPath, usize>,
    imports: &[Import],
    module: &[String],
    path: &[String],
) -> Target {
    let mut base: ModPath = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if modules.contains_key(&child) {
                // a child module: the base as it is
            } else if let Some(i) = imports
                .iter()
                .find(|i| i.module == module && i.name == first)
            {
                return match &i.target {
                    Target::Internal(t) => {
                        let mut full = t.clone();
                        full.extend_from_slice(&rest[1..]);
                        Target::Internal(full)
                    }
                    Target::External => Target::External,
                };
            } else {
                return Target::External;
            }
        }
        None => return Target::External,
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Target::Internal(base)
}

/// The `use` declarations of a file, each leaf of a use tree one import.
fn imports(file: &SourceFile, modules: &BTreeMap<ModPath, usize>) -> Vec<Import> {
    let t = &file.tokens;
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if !t[i].is("use") || (i > 0 && t[i - 1].is("::")) {
            i += 1;
            continue;
        }
        let public =
            i > 0 && (t[i - 1].is("pub") || (t[i - 1].is(")") && i >= 4 && t[i - 4].is("pub")));
        let end = (i..t.len()).find(|&k| t[k].is(";")).unwrap_or(t.len());
        let text: Vec<&str> = t[i + 1..end].iter().map(|x| x.text.as_str()).collect();
        let module = &file.token_module[i];
        let written: String = text
            .iter()
            .map(|w| if *w == "as" { " as " } else { w })
            .collect();
        for (path, name) in use_tree(&text) {
            out.push(Import {
                module: module.clone(),
                name,
                target: absolute(modules, &[], module, &path),
                public,
                line: t[i].line,
                text: format!("use {written}"),
            });
        }
        i = end;
    }
    out
}

/// The leaves of a use tree (tokens after `use`, before `;`): each leaf's
/// path and the name it binds (`*` for a glob).
fn use_tree(t: &[&str]) -> Vec<(ModPath, String)> {
    fn walk(t: &[&str], prefix: &ModPath, out: &mut Vec<(ModPath, String)>) {
        // Split t at depth-0 commas.
        let mut depth = 0;
        let mut start = 0;
        let mut parts = Vec::new();
        for (k, w) in t.iter().enumerate() {
            match *w {
                "{" => depth += 1,
                "}" => depth -= 1,
                "," if depth == 0 => {
                    parts.push(&t[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        parts.push(&t[start..]);
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let mut path = prefix.clone();
            let mut k = 0;
            let leading = part[0] == "::";
            if leading {
                k = 1;
            }
            while k < part.len() {
                match part[k] {
                    "::" => k += 1,
                    "{" => {
                        let close = part.len() - 1; // the group ends the part
                        walk(&part[k + 1..close], &path, out);
                        break;
                    }
                    "*" => {
                        out.push((path.clone(), "*".into()));
                        break;
                    }
                    "as" => {
                        let name = part[k + 1].to_string();
                        out.push((path.clone(), name));
                        break;
                    }
                    w => {
                        path.push(w.to_string());
                        k += 1;
                        if k == part.len() {
                            let name = if w == "self" {
                                path.pop();
                                path.last().cloned().unwrap_or_default()
                            } else {
                                w.to_string()
                            };
                            out.push((path.clone(), name));
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(t, &Vec::new(), &mut out);
    out
}

/// Paths in code (not in `use`): `a::b::c` sequences that start at an
/// identifier not preceded by `::`; (token index, segments, as written).
fn paths(t: &[Token]) -> Vec<(usize, ModPath, String)> {
    let mut out = Vec::new();
    let mut in_use = false;
    for i in 0..t.len() {
        if t[i].is("use") {
            in_use = true;
        } else if t[i].is(";") {
            in_use = false;
        }
        if in_use
            || !t[i].is_ident()
            || (i > 0 && t[i - 1].is("::"))
            || !t.get(i + 1).is_some_and(|x| x.is("::"))
        {
            continue;
        }
        let mut segs = vec![t[i].text.clone()];
        let mut k = i + 1;
        while t.get(k).is_some_and(|x| x.is("::")) && t.get(k + 1).is_some_and(Token::is_ident) {
            segs.push(t[k + 1].text.clone());
            k += 2;
        }
        let text = segs.join("::");
        out.push((i, segs, text));
    }
    out
}

/// Tarjan's strongly connected components.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.next[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            comp.sort_unstable();
            s.out.push(comp);
        }
    }
    let n = next.len();
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

// ---------------------------------------------------------------- the scanner's own tests

#[test]
fn blanking_hides_comments_strings_and_characters_but_keeps_lines() {
    let _g = crate::common::serial();
    let src = "let a = \"{ \\\" }\"; // { comment\n/* { /* nested } */ } */ let b = '{';\n\
               let c = r#\"}\"#; let d = '\\''; fn f<'a>(x: &'a str) {}\n";
    let b = blank(src);
    assert_eq!(b.lines().count(), src.lines().count());
    assert_eq!(b.matches('{').count(), 1, "{b}");
    assert_eq!(b.matches('}').count(), 1, "{b}");
    assert!(b.contains("fn f<'a>(x: &'a str)"), "{b}");
    assert!(b.contains("let d =") && b.contains("let c = r"), "{b}");
}

#[test]
fn test_items_are_left_out() {
    let _g = crate::common::serial();
    let src = "fn a() {}\n#[cfg(test)]\nmod tests {\n fn b() {}\n}\n#[cfg(test)]\n#[path = \"x\"]\nmod more;\n\
               #[cfg(all(test, unix))]\nfn c() {}\n#[cfg(not(test))]\nfn d() {}\n";
    let (t, test_mods) = without_tests(&tokens(&blank(src)));
    let idents: Vec<&str> = t
        .iter()
        .filter(|x| x.is_ident())
        .map(|x| x.text.as_str())
        .collect();
    assert_eq!(idents, ["fn", "a", "cfg", "not", "test", "fn", "d"]);
    assert_eq!(test_mods.into_iter().collect::<Vec<_>>(), ["more"]);
}

fn function(name: &str, body_lines: usize, above: &str) -> String {
    let mut s = format!("{above}pub(crate) fn {name}(x: &str) -> Result<(), String>\nwhere\n{{\n");
    for _ in 0..body_lines {
        s.push_str("    let s = \"}\"; // }\n");
    }
    s.push_str("}\n");
    s
}

#[test]
fn long_functions_are_measured_from_fn_to_the_closing_brace() {
    let _g = crate::common::serial();
    // fn line, `where`, `{`, the body, `}`: body + 4 lines.
    let at_limit = function("fits", MAX_FN_LINES - 4, "");
    assert_eq!(long_functions(&at_limit), []);
    let over = function("long", MAX_FN_LINES - 3, "/// Doc.\n");
    let found = long_functions(&over);
    assert_eq!(
        found,
        [LongFn {
            name: "long".into(),
            line: 2,
            lines: MAX_FN_LINES + 1,
            reason: None
        }]
    );
    let trait_decl = "trait T { fn f(&self) -> u32; }\n";
    assert_eq!(long_functions(&format!("{trait_decl}{over}"))[0].line, 3);
}

#[test]
fn a_reason_just_above_the_function_is_read() {
    let _g = crate::common::serial();
    let above =
        "// long: one match over every event kind\n#[allow(clippy::too_many_lines)]\n/// Doc.\n";
    let found = long_functions(&function("f", 200, above));
    assert_eq!(
        found[0].reason.as_deref(),
        Some("one match over every event kind")
    );
    // Not when code separates them, nor when the reason is empty.
    let apart = "// long: a reason\nconst X: u32 = 1;\n";
    assert_eq!(long_functions(&function("f", 200, apart))[0].reason, None);
    assert_eq!(
        long_functions(&function("f", 200, "// long:\n"))[0].reason,
        None
    );
}

#[test]
fn use_trees_expand_to_their_leaves() {
    let _g = crate::common::serial();
    let src = "crate::a::{b, c::{self, d}, e as f, g::*}";
    let t = tokens(src);
    let words: Vec<&str> = t.iter().map(|x| x.text.as_str()).collect();
    let leaves = use_tree(&words);
    let show: Vec<String> = leaves
        .iter()
        .map(|(p, n)| format!("{}={n}", p.join("::")))
        .collect();
    assert_eq!(
        show,
        [
            "crate::a::b=b",
            "crate::a::c=c",
            "crate::a::c::d=d",
            "crate::a::e=f",
            "crate::a::g=*"
        ]
    );
}

/// A crate of the given files in a fresh directory, loaded.
fn tree_of(files: &[(&str, &str)]) -> ModuleTree {
    let dir = std::env::temp_dir().join(format!(
        "latscope-source-shape-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let tree = ModuleTree::load(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    tree
}

fn cycle_files(tree: &ModuleTree) -> Vec<Vec<String>> {
    tree.cycles().into_iter().map(|(f, _)| f).collect()
}

#[test]
fn sibling_files_that_use_each_other_are_a_cycle() {
    let _g = crate::common::serial();
    let tree = tree_of(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        ("a.rs", "pub struct A;\nfn f() { crate::b::g(); }\n"),
        ("b.rs", "pub fn g() {}\nfn h() -> super::A { super::A }\n"),
    ]);
    assert_eq!(
        cycle_files(&tree),
        [vec!["a.rs".to_string(), "b.rs".into()]]
    );
    // The path through the re-export names a.rs, not lib.rs.
    let (_, text) = &tree.cycles()[0];
    assert!(text.contains("b.rs → a.rs (line 2: super::A)"), "{text}");
}

#[test]
fn declarations_and_re_exports_are_not_uses_but_a_parents_code_is() {
    let _g = crate::common::serial();
    let no_cycle = tree_of(&[
        ("lib.rs", "pub mod m;\npub struct Shared;\n"),
        ("m.rs", "mod x;\npub use x::X;\nuse crate::Shared;\n"),
        ("m/x.rs", "pub struct X;\nfn f(_: super::Shared) {}\n#[cfg(test)]\nmod t { use super::super::Y; }\n"),
    ]);
    assert_eq!(cycle_files(&no_cycle), Vec::<Vec<String>>::new());
    let parent_uses = tree_of(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod x;\nuse x::X;\npub struct Shared;\n"),
        (
            "m/x.rs",
            "use super::{self as parent, Shared};\npub struct X;\n",
        ),
    ]);
    assert_eq!(
        cycle_files(&parent_uses),
        [vec!["m/mod.rs".to_string(), "m/x.rs".into()]]
    );
}

#[test]
fn three_files_in_a_ring_are_one_cycle_and_external_paths_are_ignored() {
    let _g = crate::common::serial();
    let tree = tree_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nuse std::fmt;\n"),
        (
            "a.rs",
            "use crate::b::B;\npub struct A;\nfn f() { std::mem::drop(1); serde::x(); }\n",
        ),
        ("b.rs", "use super::c;\npub struct B;\nfn f() { c::C; }\n"),
        ("c.rs", "pub struct C;\nfn f() -> crate::a::A { todo!() }\n"),
    ]);
    assert_eq!(
        cycle_files(&tree),
        [vec!["a.rs".to_string(), "b.rs".into(), "c.rs".into()]]
    );
}
