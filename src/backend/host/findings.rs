//! The host memory checks' findings in words: which tensor or `__shared__` array, which
//! element, which source line (a return address mapped by `addr2line` over the module's
//! line tables), and which block and thread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use object::{Object, ObjectSymbol, SymbolKind};

use super::runtime::SimtFinding;
use super::shared_decls;
use crate::EngineError;
use crate::backend::{KernelSource, MemoryFindingKind, WatchedTensor};

/// A `__shared__` variable of a module: where it lies in the module's TLS block, its bytes,
/// the redzone after them (rewritten arrays), and its name and declaration line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedVar {
    pub name: String,
    pub line: Option<u32>,
    pub offset: u64,
    pub bytes: u64,
    pub redzone: u64,
}

/// A module's shared memory: its variables, and what its source calls the dynamic pool.
#[derive(Clone, Debug, Default)]
pub struct SharedLayout {
    pub vars: Vec<SharedVar>,
    /// The source's `extern __shared__` names (`stage`, or `stage`/`raw` when several alias it).
    pub dynamic: String,
}

/// The module's shared variables from its symbol table (every thread-local object but the
/// runtime's own), and the source's `extern __shared__` names for the dynamic pool.
pub fn shared_layout(library: &Path, source: &KernelSource) -> Result<SharedLayout, EngineError> {
    let unreadable = |reason: String| EngineError::LoadLibrary { library: library.display().to_string(), reason };
    let data = std::fs::read(library).map_err(|e| unreadable(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| unreadable(e.to_string()))?;
    let mut vars: Vec<SharedVar> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Tls && !s.is_undefined() && s.size() > 0)
        .filter_map(|s| {
            let symbol = s.name().ok()?;
            if symbol.starts_with("__simt") || symbol.contains("tls_scheduler") {
                return None;
            }
            let (name, line, rewritten) = shared_decls::variable_of_symbol(symbol);
            let redzone = if rewritten { shared_decls::REDZONE.min(s.size()) } else { 0 };
            Some(SharedVar { name, line, offset: s.address(), bytes: s.size() - redzone, redzone })
        })
        .collect();
    vars.sort_by_key(|v| v.offset);
    let text = std::fs::read_to_string(&source.path).unwrap_or_default();
    let names = shared_decls::extern_names(&text);
    let dynamic = if names.is_empty() { "dynamic shared memory".to_string() } else { names.join("`/`") };
    Ok(SharedLayout { vars, dynamic })
}

/// Source lines of return addresses in one module, looked up once each, and the source's
/// text (an index past an array's size is named from it), read once when first needed.
pub struct FindingSites {
    library: PathBuf,
    display_path: String,
    source: PathBuf,
    /// Read at the first finding that needs it (most modules never have one).
    text: std::sync::OnceLock<String>,
    known: Mutex<HashMap<u64, String>>,
}

impl FindingSites {
    pub fn new(library: &Path, source: &KernelSource) -> FindingSites {
        FindingSites {
            library: library.to_path_buf(),
            display_path: source.display_path.clone(),
            source: source.path.clone(),
            text: std::sync::OnceLock::new(),
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The array an index past its size was taken of, as the kernel's own source writes it at
    /// the compiler's line and column (`acc`, `tile[row]`): none where the access is in
    /// another file (a header's helper) or the text there is not an index.
    fn indexed_array(&self, f: &SimtFinding) -> Option<IndexedArray> {
        if !self.site(f.pc).starts_with(&format!("{}:", self.display_path)) {
            return None;
        }
        let text = self.text.get_or_init(|| std::fs::read_to_string(&self.source).unwrap_or_default());
        indexed_array(text, f.line, f.column)
    }

    /// `kernels/x.hip:21`, or `kernels/common.h:40 (inlined at kernels/x.hip:21)` when the
    /// access is in a helper; the bare offset when the line tables do not say.
    pub fn site(&self, pc: u64) -> String {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(pc).or_insert_with(|| self.look_up(pc)).clone()
    }

    fn look_up(&self, pc: u64) -> String {
        // the return address is after the call: the call's own line is one byte before it
        let address = format!("{:#x}", pc.saturating_sub(1));
        let out = Command::new("addr2line").arg("-e").arg(&self.library).arg("-i").arg(&address).output();
        let frames: Vec<String> = match out {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| l.split(" (discriminator").next().unwrap_or(l).trim())
                .filter(|l| !l.starts_with("??"))
                .map(|l| l.strip_prefix("./").unwrap_or(l).to_string())
                .collect(),
            _ => Vec::new(),
        };
        let Some(innermost) = frames.first() else { return format!("code offset {address} of the module") };
        let in_kernel = |f: &String| f.starts_with(&format!("{}:", self.display_path));
        match frames.iter().find(|f| in_kernel(f)) {
            Some(own) if !in_kernel(innermost) => format!("{innermost} (inlined at {own})"),
            _ => innermost.clone(),
        }
    }
}

fn elements(n: u64) -> String {
    if n == 1 { "1 element".to_string() } else { format!("{n} elements") }
}

fn who(f: &SimtFinding) -> String {
    format!("block ({},{},{}), thread {}", f.block[0], f.block[1], f.block[2], f.thread)
}

fn others(count: u64, what: &str) -> String {
    if count > 1 { format!("; {count} such {what} in all") } else { String::new() }
}

fn tensor_name(f: &SimtFinding, tensors: &[WatchedTensor]) -> String {
    tensors.get(f.place as usize).map_or_else(|| "memory".to_string(), |t| t.name.to_string())
}

/// An indexed array as the source writes it: `tile` of `tile[row][8]`, and `tile[row]`, what
/// the checked subscript follows (none where the compiler's place does not say which of
/// several subscripts it is).
#[derive(Debug, PartialEq, Eq)]
struct IndexedArray {
    name: String,
    expression: Option<String>,
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

/// The array indexed at 1-based `line` and `column` of `text`. GCC places its check at the
/// subscript's `]`: back over that subscript and any before it (`acc[i][j]`) to the name they
/// follow. clang places it at the start of the array's name, which does not say which of
/// several subscripts it is.
fn indexed_array(text: &str, line: u32, column: u32) -> Option<IndexedArray> {
    let line = text.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let bytes = line.as_bytes();
    let close = usize::try_from(column).ok()?.checked_sub(1)?;
    let starts_name = bytes.get(close).is_some_and(|&c| is_name_byte(c) && !c.is_ascii_digit());
    if starts_name && (close == 0 || !is_name_byte(bytes[close - 1])) {
        let end = bytes[close..].iter().position(|&c| !is_name_byte(c)).map_or(bytes.len(), |p| close + p);
        let name = &line[close..end];
        // how many subscripts follow the name, each `[` to its matching `]`
        let (mut subscripts, mut at) = (0, end);
        while line[at..].trim_start().starts_with('[') {
            at = line.len() - line[at..].trim_start().len();
            let mut depth = 0usize;
            let close = (at..bytes.len()).find(|&i| {
                depth = match bytes[i] {
                    b'[' => depth + 1,
                    b']' => depth - 1,
                    _ => depth,
                };
                depth == 0
            })?;
            subscripts += 1;
            at = close + 1;
        }
        return (subscripts > 0).then(|| IndexedArray { name: name.to_string(), expression: (subscripts == 1).then(|| name.to_string()) });
    }
    if bytes.get(close) != Some(&b']') {
        return None;
    }
    let open_of = |close: usize| -> Option<usize> {
        let mut depth = 0usize;
        (0..=close).rev().find(|&at| match bytes[at] {
            b']' => {
                depth += 1;
                false
            }
            b'[' => {
                depth -= 1;
                depth == 0
            }
            _ => false,
        })
    };
    let subscript = open_of(close)?;
    let mut end = subscript;
    loop {
        end = line[..end].trim_end().len();
        if end == 0 || bytes[end - 1] != b']' {
            break;
        }
        end = open_of(end - 1)?;
    }
    let start = bytes[..end].iter().rposition(|&c| !is_name_byte(c)).map_or(0, |p| p + 1);
    let name = &line[start..end];
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some(IndexedArray { name: name.to_string(), expression: Some(line[start..subscript].trim_end().to_string()) })
}

/// What the finding is about: the tensor, or the shared array.
pub fn subject(kind: MemoryFindingKind, f: &SimtFinding, tensors: &[WatchedTensor], shared: &SharedLayout, sites: &FindingSites) -> String {
    match kind {
        MemoryFindingKind::ArrayIndexOutOfBounds => sites.indexed_array(f).map_or_else(|| "an array".to_string(), |a| a.name),
        MemoryFindingKind::OutOfBoundsRead
        | MemoryFindingKind::OutOfBoundsWrite
        | MemoryFindingKind::InputWrite
        | MemoryFindingKind::GlobalRace => tensor_name(f, tensors),
        MemoryFindingKind::Misaligned if f.shared == 0 => tensor_name(f, tensors),
        _ => shared_place(f.place, shared, f.access_bytes, 0).0,
    }
}

/// The finding in words, with its count.
pub fn describe(
    kind: MemoryFindingKind,
    f: &SimtFinding,
    count: u64,
    tensors: &[WatchedTensor],
    shared: &SharedLayout,
    (dynamic_bytes, grid): (u64, [u32; 3]),
    sites: &FindingSites,
) -> String {
    let site = sites.site(f.pc);
    let verb = if f.write == 0 { "read" } else { "wrote" };
    let accesses = if f.write == 0 { "reads" } else { "writes" };
    match kind {
        // not an access: the build's static check says it in its own words
        MemoryFindingKind::NarrowOffset
        | MemoryFindingKind::ModuleState
        | MemoryFindingKind::InlineAssembly
        | MemoryFindingKind::HostOnlyCall
        | MemoryFindingKind::PerTargetCode => String::new(),
        MemoryFindingKind::OutOfBoundsRead | MemoryFindingKind::OutOfBoundsWrite => {
            let Some(t) = usize::try_from(f.place).ok().and_then(|p| tensors.get(p)) else {
                return format!(
                    "{verb} memory that is no tensor's (nor a guard band, shared memory, its own stack or its module) at {site} \
                     ({}){}",
                    who(f),
                    others(count, accesses)
                );
            };
            let size = t.element_bytes.max(1) as i64;
            let place = if f.offset < 0 {
                format!("{} before the start of `{}`", elements(((-f.offset) as u64).div_ceil(size as u64)), t.name)
            } else if f.offset < t.bytes as i64 {
                // a copy's range that starts inside and runs past the end: how far past it ends
                let past = (f.offset + i64::from(f.access_bytes) - t.bytes as i64).max(1) as u64;
                format!("{} past the end of `{}`", elements(past.div_ceil(size as u64)), t.name)
            } else {
                format!("{} past the end of `{}`", elements(((f.offset - t.bytes as i64) / size + 1) as u64), t.name)
            };
            format!("{verb} {place} at {site} ({}){}", who(f), others(count, accesses))
        }
        MemoryFindingKind::InputWrite => {
            let name = tensors.get(f.place as usize).map_or("an input", |t| t.name);
            let index = f.offset / tensors.get(f.place as usize).map_or(1, |t| t.element_bytes.max(1)) as i64;
            format!("wrote `{name}[{index}]`, an input, at {site} ({}){}", who(f), others(count, "writes"))
        }
        MemoryFindingKind::GlobalRace => {
            let name = tensors.get(f.place as usize).map_or("an output", |t| t.name);
            let index = f.offset / tensors.get(f.place as usize).map_or(1, |t| t.element_bytes.max(1)) as i64;
            let (gx, gy) = (grid[0].max(1), grid[1].max(1));
            let b = f.other_block;
            let earlier = if f.other_thread == 0x7ff {
                format!("an atomic update in block ({},{},{})", b % gx, (b / gx) % gy, b / (gx * gy))
            } else {
                format!("thread {} of block ({},{},{})", f.other_thread, b % gx, (b / gx) % gy, b / (gx * gy))
            };
            format!(
                "race on `{name}[{index}]`: {earlier} wrote it at {}, and thread {} of block ({},{},{}) {} it at {site}, \
                 with no barrier or order between the two{}",
                sites.site(f.other_pc),
                f.thread,
                f.block[0],
                f.block[1],
                f.block[2],
                if f.write == 2 { "updated (atomically)" } else { "wrote" },
                others(count, "stores")
            )
        }
        MemoryFindingKind::Misaligned => misaligned(f, count, tensors, shared, &site),
        MemoryFindingKind::ArrayIndexOutOfBounds => array_index(f, count, shared, sites, &site),
        MemoryFindingKind::SharedOutOfBounds => {
            let (name, what) = shared_place(f.place, shared, f.access_bytes, dynamic_bytes);
            let verb = if f.write == 0 { "read" } else { "wrote" };
            let index = f.offset / f.access_bytes.max(1) as i64;
            format!("{verb} `{name}[{index}]` past the end of {what} at {site} ({}){}", who(f), others(count, accesses))
        }
        MemoryFindingKind::SharedUnwrittenRead => {
            let (name, _) = shared_place(f.place, shared, f.access_bytes, dynamic_bytes);
            let index = f.offset / f.access_bytes.max(1) as i64;
            format!("read `{name}[{index}]` before any thread of the block wrote it, at {site} ({}){}", who(f), others(count, "reads"))
        }
        MemoryFindingKind::SharedRace => {
            let (name, _) = shared_place(f.place, shared, f.access_bytes, dynamic_bytes);
            let index = f.offset / f.access_bytes.max(1) as i64;
            let action = |write: u32| match write {
                0 => "read",
                1 => "wrote",
                _ => "updated (atomically)",
            };
            let other = if f.other_thread == 0xffff { "several threads".to_string() } else { format!("thread {}", f.other_thread) };
            format!(
                "race on `{name}[{index}]` in block ({},{},{}): {other} {} it at {}, and thread {} {} it at {site} with no barrier between{}",
                f.block[0],
                f.block[1],
                f.block[2],
                action(f.other_write),
                sites.site(f.other_pc),
                f.thread,
                action(f.write),
                others(count, "accesses")
            )
        }
    }
}

/// ``misaligned 4-byte read of `k_cache` at element 33 (byte 66) at kernels/x.hip:21 (block
/// (0,0,0), thread 5)``, or of a `__shared__` array at a byte of it (its element type is the
/// source's, not known here), with how many there were.
fn misaligned(f: &SimtFinding, count: u64, tensors: &[WatchedTensor], shared: &SharedLayout, site: &str) -> String {
    let access = match f.write {
        0 => "read",
        1 => "write",
        2 => "atomic update",
        _ => "atomic read",
    };
    let place = if f.shared == 0 {
        let (name, size) = tensors.get(f.place as usize).map_or(("memory", 1), |t| (t.name, t.element_bytes.max(1) as i64));
        format!("`{name}` at element {} (byte {})", f.offset.div_euclid(size), f.offset)
    } else {
        let (name, _) = shared_place(f.place, shared, f.access_bytes, 0);
        format!("`__shared__` `{name}` at byte {}", f.offset)
    };
    // x86 faults on a misaligned 16-byte vector move too: such a block stopped at its first
    let (stopped, more) = match f.access_bytes {
        16 => ("; the block stopped there", others(count, "blocks stopped so")),
        _ => ("", others(count, "accesses")),
    };
    format!(
        "misaligned {}-byte {access} of {place} at {site} ({}): a GPU faults on an access whose address is not a multiple of \
         its size{stopped}{more}",
        f.access_bytes,
        who(f)
    )
}

/// ``indexed `acc[8]`, past the end of `acc` (8 elements) at kernels/x.hip:47 (block
/// (0,0,0), thread 3): ...``: the compiler's check runs before the access and does not say
/// whether it reads or writes. A `__shared__` array is said to be one, with its line.
fn array_index(f: &SimtFinding, count: u64, shared: &SharedLayout, sites: &FindingSites, site: &str) -> String {
    let index = f.offset;
    let array = sites.indexed_array(f);
    // of the module's `__shared__` arrays of that name, the one declared last above the access
    let declared = array
        .as_ref()
        .and_then(|a| shared.vars.iter().filter(|v| v.name == a.name && v.line.is_none_or(|l| l <= f.line)).max_by_key(|v| v.line))
        .map(|v| format!(", `__shared__`{}", v.line.map(|l| format!(", declared at line {l}")).unwrap_or_default()))
        .unwrap_or_default();
    let (element, whose) = match &array {
        Some(IndexedArray { expression: Some(e), .. }) => (format!("`{e}[{index}]`"), format!("`{e}`")),
        Some(IndexedArray { name, expression: None }) => (format!("`{name}` at index {index}"), "its dimension".to_string()),
        None => (format!("element {index} of an array"), "it".to_string()),
    };
    let place = match u64::try_from(f.place) {
        _ if index < 0 => format!("{element}, before the start of {whose}"),
        Ok(size) => format!("{element}, past the end of {whose} ({}{declared})", elements(size)),
        Err(_) => format!("{element}, past the end of {whose}"),
    };
    format!(
        "indexed {place} at {site} ({}): an index outside the size the source declares; the block stopped there{}",
        who(f),
        if count > 1 { format!("; {count} blocks stopped so") } else { String::new() }
    )
}

/// The array's name and what its end is: `partial` and "`partial` (256 elements, declared
/// at line 10)", or the dynamic pool's names.
fn shared_place(place: i64, shared: &SharedLayout, access_bytes: u32, dynamic_bytes: u64) -> (String, String) {
    match usize::try_from(place).ok().and_then(|p| shared.vars.get(p)) {
        Some(v) => {
            let n = v.bytes / access_bytes.max(1) as u64;
            let line = v.line.map(|l| format!(", declared at line {l}")).unwrap_or_default();
            (v.name.clone(), format!("`{}` ({}{line})", v.name, elements(n)))
        }
        None => (shared.dynamic.clone(), format!("the launch's {dynamic_bytes} bytes of dynamic shared memory")),
    }
}

#[cfg(test)]
mod tests {
    use super::{IndexedArray, indexed_array};

    /// The column of the `n`th `]` of `line` (1-based), as GCC gives a subscript's.
    fn close(line: &str, n: usize) -> u32 {
        line.match_indices(']').nth(n).map(|(at, _)| at as u32 + 1).unwrap()
    }

    fn array(name: &str, expression: &str) -> Option<IndexedArray> {
        Some(IndexedArray { name: name.into(), expression: Some(expression.into()) })
    }

    #[test]
    fn an_index_is_traced_back_to_the_array_the_source_names() {
        let line = "    acc[e] += p * tile [ key ] [c];";
        let text = format!("// first line\n{line}\n");
        assert_eq!(indexed_array(&text, 2, close(line, 0)), array("acc", "acc"));
        assert_eq!(indexed_array(&text, 2, close(line, 1)), array("tile", "tile"));
        assert_eq!(indexed_array(&text, 2, close(line, 2)), array("tile", "tile [ key ]"));
        let nested = "y = m[idx[t]][n % 5] + s.vals[i];";
        assert_eq!(indexed_array(nested, 1, close(nested, 0)), array("idx", "idx"));
        assert_eq!(indexed_array(nested, 1, close(nested, 2)), array("m", "m[idx[t]]"));
        assert_eq!(indexed_array(nested, 1, close(nested, 3)), array("s.vals", "s.vals"));
    }

    #[test]
    fn clangs_place_the_start_of_the_name_says_the_subscript_only_where_there_is_one() {
        let line = "  y[t] = acc[k] + m[i][j] + s.vals [i];";
        let at = |name: &str| line.find(name).unwrap() as u32 + 1;
        assert_eq!(indexed_array(line, 1, at("acc")), array("acc", "acc"));
        assert_eq!(indexed_array(line, 1, at("s.vals")), array("s.vals", "s.vals"));
        assert_eq!(indexed_array(line, 1, at("m[")), Some(IndexedArray { name: "m".into(), expression: None }));
        assert_eq!(indexed_array(line, 1, at("cc[")), None, "inside a name");
        assert_eq!(indexed_array("x = count + 1;", 1, 5), None, "a name no subscript follows");
    }

    #[test]
    fn a_place_that_is_no_subscript_names_nothing() {
        let line = "  y[t] = 3[x] + f(a)[1];";
        assert_eq!(indexed_array(line, 1, 4), None, "not at a `]`");
        assert_eq!(indexed_array(line, 1, close(line, 1)), None, "a number, not a name");
        assert_eq!(indexed_array(line, 1, close(line, 2)), None, "a call's result");
        assert_eq!(indexed_array(line, 2, close(line, 0)), None, "past the last line");
        assert_eq!(indexed_array(line, 0, 1), None);
        assert_eq!(indexed_array("a]", 1, 2), None, "no `[` before it");
    }
}
