//! The kernel cache shared by every build (host libraries, cubins with their logs, gfx code
//! objects), in the manner of ccache's direct mode: a key of what is known before compiling
//! names a manifest; the manifest lists every file the compiler read, with its hash, and the
//! hash of each artifact; a lookup re-hashes both and any difference is a rebuild.
//!
//! Files under the source's repository (and the repository-relative include folders in the
//! key) are recorded relative to it, so a copy of the repository with the same bytes shares
//! entries. Headers in the compiler's own folders are recorded by size and modification
//! time (their bytes come with the compiler, whose identity is in the key); every other file
//! by its SHA-256. Artifacts and manifests land by rename from a unique name in the same
//! folder, so a concurrent reader sees a whole file or none, and the folder can be shared by
//! every checkout and run of a user (the harness's default). An artifact that names the
//! checkout it was built in (a compiler's log naming a header by its absolute path, line
//! tables a prefix map could not reach, a string of the source) would print that checkout's
//! paths from another: its entry names the checkout, and serves it alone.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::EngineError;
use crate::backend::KernelSource;

/// First line of every manifest; part of every key, so a format change starts afresh.
const FORMAT: &str = "kernel-contracts kernel-cache manifest 1";

/// Manifest entries kept per key: one per set of header contents seen lately (a branch
/// switch and back, a second checkout of the repository).
const ENTRIES_KEPT: usize = 8;

/// What a runtime compiler (NVRTC, hiprtc) reads for `source` with `prelude` included
/// first. Neither has a dependency output nor an include callback, so the host C++
/// preprocessor runs over the source as they see it: the same include folders and prelude,
/// their predefined macros and none of its own, no system folders (they have none): `defines`
/// says so (`-undef`, `-nostdinc`, `-D...`). A header it
/// cannot find (`-MG`) is one of the compiler's builtin headers, which come with its
/// identity: it is recorded as absent from every folder it could be found in. `None` when no
/// host compiler runs or the preprocessor fails: the artifact is then used but not kept.
pub fn runtime_compiler_reads(source: &KernelSource, prelude: &Path, defines: &[String]) -> Option<Reads> {
    static PREPROCESSOR: OnceLock<Option<String>> = OnceLock::new();
    let program = PREPROCESSOR.get_or_init(|| crate::backend::host::HostCompiler::discover().ok().map(|c| c.program)).as_ref()?;
    let mut command = Command::new(program);
    command.args(["-x", "c++", "-std=c++17"]);
    command.args(defines);
    for dir in &source.include_dirs {
        command.arg("-I").arg(dir);
    }
    command.arg("-include").arg(prelude).arg(&source.path);
    command.args(["-M", "-MG", "-MT", DEPFILE_TARGET]);
    let out = command.stdin(Stdio::null()).stderr(Stdio::null()).output().ok().filter(|o| o.status.success())?;
    let (found, missing): (Vec<PathBuf>, Vec<PathBuf>) =
        depfile_paths(&String::from_utf8_lossy(&out.stdout)).into_iter().map(PathBuf::from).partition(|p| p.is_absolute());
    let mut folders: Vec<PathBuf> = source.path.parent().into_iter().map(Path::to_path_buf).collect();
    folders.extend(source.include_dirs.iter().cloned());
    folders.extend(found.iter().filter_map(|f| f.parent().map(Path::to_path_buf)));
    let absent = missing.iter().flat_map(|name| folders.iter().map(move |folder| folder.join(name))).collect();
    Some(Reads { files: found, absent })
}

/// The dependency target name builds ask for (`-MT`): the depfile's first word, then `:`.
pub const DEPFILE_TARGET: &str = "kernel-contracts-build";

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn digest_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The part of a source's path before its display path (the repository it lies in).
pub fn repository_root(source: &KernelSource) -> Option<PathBuf> {
    let full = source.path.to_str()?;
    let prefix = full.strip_suffix(&source.display_path)?;
    prefix.ends_with('/').then(|| PathBuf::from(prefix))
}

/// What names a manifest: a hash of everything known before compiling.
#[derive(Clone, Debug)]
pub struct CacheKey {
    /// `tf_add` or `tf_add-sm_90`: the start of every file name of the key.
    label: String,
    digest: [u8; 32],
    root: Option<PathBuf>,
}

impl CacheKey {
    /// `source_bytes` are the source as the build compiles it (read once, after the build
    /// began, so the key and the artifact come from the same bytes); `parts` name the
    /// compiler, its identity, its flags and anything else the build does (never a path of
    /// the repository: include folders and the source are added here, relative to it).
    pub fn new(source: &KernelSource, source_bytes: &[u8], prelude: &[u8], parts: &[&str], tag: &str) -> CacheKey {
        let root = repository_root(source);
        let stem = source.path.file_stem().and_then(|s| s.to_str()).unwrap_or("kernel");
        let label = if tag.is_empty() { stem.to_string() } else { format!("{stem}-{tag}") };
        let mut key = CacheKey { label, digest: [0; 32], root };
        let mut hash = Sha256::new();
        let mut add = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        add(FORMAT.as_bytes());
        add(tag.as_bytes());
        for part in parts {
            add(part.as_bytes());
        }
        add(source.display_path.as_bytes());
        add(key.stored(&source.path).unwrap_or_default().as_bytes());
        add(source.kernels.join(",").as_bytes());
        for dir in &source.include_dirs {
            add(key.stored(dir).unwrap_or_default().as_bytes());
        }
        add(prelude);
        add(source_bytes);
        key.digest = hash.finalize().into();
        key
    }

    /// `tf_add-<hex>`: a name of this key alone, for files a build names before the cache
    /// has stored it (a coverage build's profile data, written by the library at exit).
    pub fn short_name(&self) -> String {
        format!("{}-{}", self.label, hex(&self.digest[..8]))
    }

    fn manifest_name(&self) -> String {
        format!("{}-{}.manifest", self.label, hex(&self.digest[..12]))
    }

    /// An artifact's name: the key and what the compiler read, so builds from other header
    /// contents never share a name.
    fn artifact_name(&self, dependencies: &[Dependency], index: usize, extension: &str) -> String {
        let mut hash = Sha256::new();
        hash.update(self.digest);
        for dependency in dependencies {
            hash.update(dependency.line().as_bytes());
            hash.update(b"\n");
        }
        hash.update(index.to_le_bytes());
        format!("{}-{}.{extension}", self.label, hex(&hash.finalize()[..12]))
    }

    /// How a path is written in a manifest: `r:` and the part under the repository, else `a:`
    /// and the path as given. `None` for what a line cannot hold (a newline, not UTF-8).
    fn stored(&self, path: &Path) -> Option<String> {
        let (mark, rest) = match self.root.as_deref().and_then(|root| path.strip_prefix(root).ok()) {
            Some(relative) => ("r:", relative),
            None => ("a:", path),
        };
        let text = rest.to_str().filter(|t| !t.contains('\n'))?;
        Some(format!("{mark}{text}"))
    }

    /// The checkout's path as text, `/` at its end; none for the file system's root or a
    /// path a manifest line cannot hold.
    fn root_text(&self) -> Option<String> {
        self.root.as_ref()?.to_str().filter(|r| r.len() > 1 && !r.contains('\n')).map(str::to_string)
    }

    fn resolve(&self, stored: &str) -> Option<PathBuf> {
        match stored.split_at_checked(2)? {
            ("r:", relative) => Some(self.root.as_ref()?.join(relative)),
            ("a:", absolute) => Some(PathBuf::from(absolute)),
            _ => None,
        }
    }
}

/// One file a build read (or looked for), as a manifest line.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Dependency {
    /// Its bytes count: their SHA-256.
    Content { path: String, sha256: String },
    /// A header of the compiler's own folders: its bytes come with the compiler, so its size
    /// and modification time stand for them (a package update changes both).
    System { path: String, len: u64, modified: i64, modified_ns: i64 },
    /// A name the build looked for and did not find: creating it changes what is read.
    Absent { path: String },
    /// The checkout the build was made in, for an artifact that names it: the entry serves
    /// that checkout alone, so no other prints its paths.
    Checkout { path: String },
}

impl Dependency {
    fn line(&self) -> String {
        match self {
            Dependency::Content { path, sha256 } => format!("content {sha256} {path}"),
            Dependency::System { path, len, modified, modified_ns } => format!("system {len} {modified}.{modified_ns} {path}"),
            Dependency::Absent { path } => format!("absent {path}"),
            Dependency::Checkout { path } => format!("checkout {path}"),
        }
    }

    fn parse(line: &str) -> Option<Dependency> {
        let (kind, rest) = line.split_once(' ')?;
        match kind {
            "content" => {
                let (sha256, path) = rest.split_once(' ')?;
                Some(Dependency::Content { path: path.into(), sha256: sha256.into() })
            }
            "system" => {
                let (len, rest) = rest.split_once(' ')?;
                let (time, path) = rest.split_once(' ')?;
                let (modified, modified_ns) = time.split_once('.')?;
                Some(Dependency::System {
                    path: path.into(),
                    len: len.parse().ok()?,
                    modified: modified.parse().ok()?,
                    modified_ns: modified_ns.parse().ok()?,
                })
            }
            "absent" => Some(Dependency::Absent { path: rest.into() }),
            "checkout" => Some(Dependency::Checkout { path: rest.into() }),
            _ => None,
        }
    }

    /// Whether the file is still as recorded.
    fn holds(&self, key: &CacheKey) -> bool {
        match self {
            Dependency::Content { path, sha256 } => {
                key.resolve(path).and_then(|p| fs::read(p).ok()).is_some_and(|bytes| &digest_hex(&bytes) == sha256)
            }
            Dependency::System { path, len, modified, modified_ns } => key
                .resolve(path)
                .and_then(|p| fs::metadata(p).ok())
                .is_some_and(|m| (m.len(), m.mtime(), m.mtime_nsec()) == (*len, *modified, *modified_ns)),
            Dependency::Absent { path } => {
                key.resolve(path).is_some_and(|p| matches!(fs::symlink_metadata(p), Err(e) if e.kind() == ErrorKind::NotFound))
            }
            Dependency::Checkout { path } => key.root_text().as_ref() == Some(path),
        }
    }
}

/// One manifest entry: what one build read, and what it made.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// File name (in the cache folder) and SHA-256 of each artifact, in the build's order.
    artifacts: Vec<(String, String)>,
    dependencies: Vec<Dependency>,
}

fn manifest_text(entries: &[Entry]) -> String {
    let mut text = format!("{FORMAT}\n");
    for entry in entries {
        text.push_str("entry\n");
        for (name, sha256) in &entry.artifacts {
            text.push_str(&format!("artifact {sha256} {name}\n"));
        }
        for dependency in &entry.dependencies {
            text.push_str(&dependency.line());
            text.push('\n');
        }
        text.push_str("end\n");
    }
    let sum = digest_hex(text.as_bytes());
    text.push_str(&format!("sum {sum}\n"));
    text
}

/// The entries of a manifest; `None` for anything but a whole, well-formed one.
fn parse_manifest(text: &str) -> Option<Vec<Entry>> {
    let body = text.strip_suffix('\n')?;
    let (body, sum) = body.rsplit_once('\n').map(|(b, s)| (format!("{b}\n"), s))?;
    if sum.strip_prefix("sum ")? != digest_hex(body.as_bytes()) {
        return None;
    }
    let mut lines = body.lines();
    if lines.next()? != FORMAT {
        return None;
    }
    let mut entries = Vec::new();
    let mut current: Option<Entry> = None;
    for line in lines {
        match (line, current.as_mut()) {
            ("entry", None) => current = Some(Entry { artifacts: Vec::new(), dependencies: Vec::new() }),
            ("end", Some(_)) => entries.push(current.take()?),
            (line, Some(entry)) => match line.strip_prefix("artifact ") {
                Some(rest) => {
                    let (sha256, name) = rest.split_once(' ')?;
                    entry.artifacts.push((name.into(), sha256.into()));
                }
                None => entry.dependencies.push(Dependency::parse(line)?),
            },
            _ => return None,
        }
    }
    current.is_none().then_some(entries)
}

/// An artifact as the cache gives it back: where it lies, and its bytes, as they hashed.
#[derive(Clone, Debug)]
pub struct Found {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// An artifact a build made: a file in its build folder (moved into place) or bytes.
pub enum Staged {
    File(PathBuf),
    Bytes(Vec<u8>),
}

/// What a build read, from the compiler's dependency output.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    /// Every file the compiler read.
    pub files: Vec<PathBuf>,
    /// Paths where a file would have been read had it existed.
    pub absent: Vec<PathBuf>,
}

/// The folder of one build, made in the cache folder before the build reads anything: its
/// change time, in the file system's own clock, tells which inputs changed during the build
/// (a build that read a file changed after it began is used, but not recorded).
pub struct BuildDir {
    path: PathBuf,
    began: (i64, i64),
}

impl BuildDir {
    pub fn new(cache_dir: &Path, label: &str) -> Result<BuildDir, EngineError> {
        static BUILDS: AtomicU64 = AtomicU64::new(0);
        let build = BUILDS.fetch_add(1, Ordering::Relaxed);
        fs::create_dir_all(cache_dir).map_err(|e| EngineError::Cache { path: cache_dir.to_path_buf(), source: e })?;
        let path = cache_dir.join(format!(".build-{label}-{}-{build}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).map_err(|e| EngineError::Cache { path: path.clone(), source: e })?;
        let metadata = fs::metadata(&path).map_err(|e| EngineError::Cache { path: path.clone(), source: e })?;
        Ok(BuildDir { path, began: (metadata.ctime(), metadata.ctime_nsec()) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file has not changed since the build began. Changed at the same tick as
    /// the folder was made counts as changed: the clock may be coarse.
    fn settled(&self, metadata: &fs::Metadata) -> bool {
        let changed = (metadata.mtime(), metadata.mtime_nsec()).max((metadata.ctime(), metadata.ctime_nsec()));
        changed < self.began
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// What a build read, as manifest lines, and whether all of it predates the build.
pub struct Recorded {
    dependencies: Vec<Dependency>,
    settled: bool,
}

/// Classifies what the compiler read: files under `user_dirs` (the repository, the source's
/// folder, the include folders) or outside every `system_dirs` folder by content, the
/// compiler's own headers by size and time, names not found as absent.
pub fn record(key: &CacheKey, reads: &Reads, user_dirs: &[PathBuf], system_dirs: &[PathBuf], build: &BuildDir) -> Recorded {
    let mut recorded = Recorded { dependencies: Vec::new(), settled: true };
    let system_dirs: Vec<PathBuf> = system_dirs.iter().filter_map(|d| d.canonicalize().ok()).collect();
    let is_system = |path: &Path| {
        !user_dirs.iter().any(|d| path.starts_with(d))
            && path.canonicalize().is_ok_and(|real| system_dirs.iter().any(|d| real.starts_with(d)))
    };
    let mut files: Vec<&PathBuf> = reads.files.iter().collect();
    files.sort();
    files.dedup();
    for file in files {
        let (Some(path), Ok(metadata)) = (key.stored(file), fs::metadata(file)) else {
            recorded.settled = false;
            continue;
        };
        recorded.settled &= build.settled(&metadata);
        let dependency = if is_system(file) {
            Dependency::System { path, len: metadata.len(), modified: metadata.mtime(), modified_ns: metadata.mtime_nsec() }
        } else {
            match fs::read(file) {
                Ok(bytes) => Dependency::Content { path, sha256: digest_hex(&bytes) },
                Err(_) => {
                    recorded.settled = false;
                    continue;
                }
            }
        };
        recorded.dependencies.push(dependency);
    }
    let mut absent: Vec<&PathBuf> = reads.absent.iter().collect();
    absent.sort();
    absent.dedup();
    for path in absent {
        match key.stored(path) {
            Some(path) => recorded.dependencies.push(Dependency::Absent { path }),
            None => recorded.settled = false,
        }
    }
    recorded
}

/// A cache folder: manifests and artifacts side by side.
pub struct KernelCache {
    dir: PathBuf,
}

impl KernelCache {
    pub fn new(dir: &Path) -> KernelCache {
        KernelCache { dir: dir.to_path_buf() }
    }

    /// The artifacts of the first entry whose every read file is as recorded and whose
    /// artifacts hash as recorded; `None` is a rebuild (an unreadable manifest included).
    pub fn lookup(&self, key: &CacheKey, artifacts: usize) -> Option<Vec<Found>> {
        let text = fs::read_to_string(self.dir.join(key.manifest_name())).ok()?;
        let entry = parse_manifest(&text)?
            .into_iter()
            .find(|entry| entry.artifacts.len() == artifacts && entry.dependencies.iter().all(|d| d.holds(key)))?;
        entry
            .artifacts
            .iter()
            .map(|(name, sha256)| {
                let path = self.dir.join(name);
                let bytes = fs::read(&path).ok().filter(|bytes| &digest_hex(bytes) == sha256)?;
                Some(Found { path, bytes })
            })
            .collect()
    }

    /// Moves a build's artifacts into place under names of the key and what was read, and,
    /// when nothing read changed during the build, records them in the key's manifest.
    pub fn store(&self, key: &CacheKey, recorded: Recorded, artifacts: Vec<(&str, Staged)>) -> Result<Vec<Found>, EngineError> {
        let mut entry = Entry { artifacts: Vec::new(), dependencies: recorded.dependencies };
        let mut read = Vec::new();
        for (extension, staged) in artifacts {
            let bytes = match &staged {
                Staged::File(file) => fs::read(file).map_err(|e| EngineError::Cache { path: file.clone(), source: e })?,
                Staged::Bytes(bytes) => bytes.clone(),
            };
            read.push((extension, staged, bytes));
        }
        // an artifact that names its checkout (a compiler's log naming a header by its
        // absolute path, a string of the source) is this checkout's alone
        if let Some(root) = key.root_text().filter(|root| read.iter().any(|(_, _, bytes)| contains(bytes, root.as_bytes()))) {
            entry.dependencies.push(Dependency::Checkout { path: root });
        }
        let mut found = Vec::new();
        for (index, (extension, staged, bytes)) in read.into_iter().enumerate() {
            let name = key.artifact_name(&entry.dependencies, index, extension);
            let path = self.dir.join(&name);
            match staged {
                Staged::File(file) => fs::rename(&file, &path).map_err(|e| EngineError::Cache { path: path.clone(), source: e })?,
                Staged::Bytes(_) => write_atomically(&path, &bytes)?,
            }
            entry.artifacts.push((name, digest_hex(&bytes)));
            found.push(Found { path, bytes });
        }
        if recorded.settled {
            self.add_entry(key, entry)?;
        }
        Ok(found)
    }

    /// The new entry first; an older one for the same reads or artifacts goes. Two builds
    /// adding at once may lose one entry: that is a rebuild later, never a wrong artifact.
    fn add_entry(&self, key: &CacheKey, entry: Entry) -> Result<(), EngineError> {
        let path = self.dir.join(key.manifest_name());
        let mut entries = fs::read_to_string(&path).ok().and_then(|t| parse_manifest(&t)).unwrap_or_default();
        entries.retain(|old| {
            old.dependencies != entry.dependencies && !old.artifacts.iter().any(|(name, _)| entry.artifacts.iter().any(|(n, _)| n == name))
        });
        entries.insert(0, entry);
        entries.truncate(ENTRIES_KEPT);
        write_atomically(&path, manifest_text(&entries).as_bytes())
    }
}

fn contains(bytes: &[u8], part: &[u8]) -> bool {
    !part.is_empty() && bytes.windows(part.len()).any(|w| w == part)
}

/// Writes `bytes` to a unique name beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("cache");
    let staged = path.with_file_name(format!(".{name}.{}-{write}.tmp", std::process::id()));
    let result = fs::write(&staged, bytes)
        .map_err(|e| EngineError::Cache { path: staged.clone(), source: e })
        .and_then(|()| fs::rename(&staged, path).map_err(|e| EngineError::Cache { path: path.to_path_buf(), source: e }));
    if result.is_err() {
        let _ = fs::remove_file(&staged);
    }
    result
}

/// Makes the cache folder if needed and checks that a build can write in it, so that a
/// folder that cannot hold the cache is one clear error before anything builds.
pub fn prepare_folder(dir: &Path) -> Result<(), EngineError> {
    let refuse = |reason: String| EngineError::CacheFolder { path: dir.to_path_buf(), reason };
    if dir.exists() && !dir.is_dir() {
        return Err(refuse("it is a file, not a folder".into()));
    }
    fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot make it: {e}")))?;
    let probe = dir.join(format!(".write-check-{}", std::process::id()));
    fs::write(&probe, b"").map_err(|e| refuse(format!("cannot write in it: {e}")))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// The paths of a make-style dependency file (`-MD -MF`, `-M`) of target [`DEPFILE_TARGET`],
/// unescaped as GCC and clang escape them (`\ `, `\#`, `$$`, backslash-newline).
pub fn depfile_paths(text: &str) -> Vec<String> {
    let body = text.split_once(&format!("{DEPFILE_TARGET}:")).map_or("", |(_, rest)| rest);
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some(' ' | '#')) => current.push(chars.next().unwrap_or(' ')),
            ('\\', Some('\n' | '\r')) | (' ' | '\t' | '\n' | '\r', _) => {
                if !current.is_empty() {
                    paths.push(std::mem::take(&mut current));
                }
            }
            ('$', Some('$')) => {
                chars.next();
                current.push('$');
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(current);
    }
    paths
}

/// The folders a compiler searches for `#include <...>` with these arguments (what
/// `-E -v` prints), asked once per compiler and arguments. Empty when it cannot say: then
/// every header is recorded by content, which is sound, only slower to check.
pub fn system_include_dirs(program: &str, args: &[String]) -> Vec<PathBuf> {
    static ASKED: OnceLock<Mutex<HashMap<Vec<String>, Vec<PathBuf>>>> = OnceLock::new();
    let mut question = vec![program.to_string()];
    question.extend(args.iter().cloned());
    let asked = ASKED.get_or_init(Default::default);
    if let Some(dirs) = asked.lock().unwrap_or_else(|p| p.into_inner()).get(&question) {
        return dirs.clone();
    }
    let output = Command::new(program).args(args).args(["-E", "-v", "-"]).stdin(Stdio::null()).stdout(Stdio::null()).output();
    let dirs = output.map(|out| search_list(&String::from_utf8_lossy(&out.stderr))).unwrap_or_default();
    asked.lock().unwrap_or_else(|p| p.into_inner()).insert(question, dirs.clone());
    dirs
}

/// The `#include <...>` search list of a compiler's `-v` output.
fn search_list(text: &str) -> Vec<PathBuf> {
    text.lines()
        .skip_while(|l| !l.starts_with("#include <...> search starts here:"))
        .skip(1)
        .take_while(|l| !l.starts_with("End of search list."))
        .map(|l| PathBuf::from(l.trim().trim_end_matches(" (framework directory)")))
        .collect()
}

/// The folders whose files count by content whatever the compiler says of them: the
/// repository, the source's own folder and the include folders.
pub fn user_dirs(source: &KernelSource) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = repository_root(source).into_iter().collect();
    dirs.extend(source.path.parent().map(Path::to_path_buf));
    dirs.extend(source.include_dirs.iter().cloned());
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(root: &Path) -> KernelSource {
        KernelSource {
            path: root.join("kernels/k.hip"),
            display_path: "kernels/k.hip".into(),
            kernels: vec!["k".into()],
            include_dirs: vec![root.join("kernels")],
        }
    }

    #[test]
    fn depfiles_are_read_as_gcc_and_clang_escape_them() {
        let text = format!("{DEPFILE_TARGET}: /r/kernels/k.hip /r/with\\ space.h \\\n /r/hash\\#.h /r/dollar$$.h\\\n  builtin.h\n");
        assert_eq!(depfile_paths(&text), ["/r/kernels/k.hip", "/r/with space.h", "/r/hash#.h", "/r/dollar$.h", "builtin.h"]);
        assert!(depfile_paths("another-target: /x.h\n").is_empty());
    }

    #[test]
    fn the_search_list_is_read_from_the_verbose_output() {
        let text = "ignoring nonexistent directory \"/nowhere\"\n#include \"...\" search starts here:\n\
                    #include <...> search starts here:\n /usr/lib/x/include\n /opt/f (framework directory)\n\
                    End of search list.\n";
        assert_eq!(search_list(text), [PathBuf::from("/usr/lib/x/include"), PathBuf::from("/opt/f")]);
    }

    #[test]
    fn paths_under_the_repository_are_stored_relative_to_it() {
        let key = CacheKey::new(&source(Path::new("/repo")), b"src", b"prelude", &["cc"], "");
        assert_eq!(key.stored(Path::new("/repo/kernels/sub/h.h")).unwrap(), "r:kernels/sub/h.h");
        assert_eq!(key.stored(Path::new("/repo/kernels/../../elsewhere/x.h")).unwrap(), "r:kernels/../../elsewhere/x.h");
        assert_eq!(key.stored(Path::new("/usr/include/stdio.h")).unwrap(), "a:/usr/include/stdio.h");
        assert_eq!(key.stored(Path::new("/repo/a\nb.h")), None, "a newline cannot be a manifest line");
        assert_eq!(key.resolve("r:kernels/h.h").unwrap(), Path::new("/repo/kernels/h.h"));
        // a copy of the repository has the same key, another source or flag another one
        let copy = CacheKey::new(&source(Path::new("/copy")), b"src", b"prelude", &["cc"], "");
        assert_eq!(key.digest, copy.digest);
        assert_eq!(copy.resolve("r:kernels/h.h").unwrap(), Path::new("/copy/kernels/h.h"));
        for other in [
            CacheKey::new(&source(Path::new("/repo")), b"src2", b"prelude", &["cc"], ""),
            CacheKey::new(&source(Path::new("/repo")), b"src", b"prelude2", &["cc"], ""),
            CacheKey::new(&source(Path::new("/repo")), b"src", b"prelude", &["cc", "-O3"], ""),
            CacheKey::new(&source(Path::new("/repo")), b"src", b"prelude", &["cc"], "sm_90"),
        ] {
            assert_ne!(other.digest, key.digest);
        }
        let mut outside = source(Path::new("/repo"));
        outside.include_dirs.push(PathBuf::from("/opt/headers"));
        assert_ne!(CacheKey::new(&outside, b"src", b"prelude", &["cc"], "").digest, key.digest);
    }

    #[test]
    fn a_manifest_reads_back_and_any_damage_refuses_it() {
        let entries = vec![Entry {
            artifacts: vec![("k-1.so".into(), "ab".repeat(32))],
            dependencies: vec![
                Dependency::Content { path: "r:kernels/a b.h".into(), sha256: "cd".repeat(32) },
                Dependency::System { path: "a:/usr/include/x.h".into(), len: 12, modified: -3, modified_ns: 7 },
                Dependency::Absent { path: "r:kernels/cuda_fp16.h".into() },
            ],
        }];
        let text = manifest_text(&entries);
        assert_eq!(parse_manifest(&text), Some(entries));
        assert_eq!(parse_manifest(&text[..text.len() / 2]), None, "truncated");
        assert_eq!(parse_manifest(&text.replacen("k-1.so", "k-2.so", 1)), None, "a changed byte");
        assert_eq!(parse_manifest(""), None);
    }

    #[test]
    fn a_file_for_a_folder_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache");
        fs::write(&file, b"").unwrap();
        let error = prepare_folder(&file).unwrap_err().to_string();
        assert!(error.contains(&file.display().to_string()) && error.contains("a file, not a folder"), "{error}");
        prepare_folder(&dir.path().join("new/cache")).unwrap();
        assert!(dir.path().join("new/cache").is_dir());
    }

    /// A stored entry is found while what it read holds; a changed, created or removed file
    /// and a damaged artifact are each a miss.
    #[test]
    fn lookups_hold_only_while_every_read_file_and_the_artifact_do() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join("kernels")).unwrap();
        let header = root.join("kernels/h.h");
        fs::write(&header, "one").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let cache_dir = dir.path().join("cache");
        let cache = KernelCache::new(&cache_dir);
        let key = CacheKey::new(&source(&root), b"src", b"", &["cc"], "");
        let store = |bytes: &[u8]| {
            let build = BuildDir::new(&cache_dir, "test").unwrap();
            let reads = Reads { files: vec![header.clone()], absent: vec![root.join("kernels/new.h")] };
            let recorded = record(&key, &reads, &user_dirs(&source(&root)), &[], &build);
            assert!(recorded.settled);
            cache.store(&key, recorded, vec![("bin", Staged::Bytes(bytes.to_vec()))]).unwrap().remove(0)
        };
        let stored = store(b"artifact one");
        let found = cache.lookup(&key, 1).expect("a hit");
        assert_eq!((&found[0].path, found[0].bytes.as_slice()), (&stored.path, &b"artifact one"[..]));
        assert!(cache.lookup(&key, 2).is_none(), "another artifact count is another build");

        fs::write(&header, "two").unwrap();
        assert!(cache.lookup(&key, 1).is_none(), "a changed header");
        fs::write(&header, "one").unwrap();
        assert!(cache.lookup(&key, 1).is_some(), "the header as recorded again");

        fs::write(root.join("kernels/new.h"), "").unwrap();
        assert!(cache.lookup(&key, 1).is_none(), "a file where none was");
        fs::remove_file(root.join("kernels/new.h")).unwrap();

        fs::write(&stored.path, b"artifact onf").unwrap();
        assert!(cache.lookup(&key, 1).is_none(), "a flipped byte");
        fs::write(&stored.path, b"artifact").unwrap();
        assert!(cache.lookup(&key, 1).is_none(), "truncated");
        fs::remove_file(&stored.path).unwrap();
        assert!(cache.lookup(&key, 1).is_none(), "removed");

        store(b"artifact one");
        assert!(cache.lookup(&key, 1).is_some(), "rebuilt");
        let names: Vec<String> = fs::read_dir(&cache_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "the artifact and the manifest, nothing half-written: {names:?}");
    }

    #[test]
    fn an_artifact_naming_its_checkout_serves_that_checkout_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (root, copy) = (dir.path().join("repo"), dir.path().join("copy"));
        let cache_dir = dir.path().join("cache");
        let cache = KernelCache::new(&cache_dir);
        let key = CacheKey::new(&source(&root), b"src", b"", &["cc"], "");
        let key_of_copy = CacheKey::new(&source(&copy), b"src", b"", &["cc"], "");
        assert_eq!(key.digest, key_of_copy.digest);
        let store = |bytes: Vec<u8>| {
            let build = BuildDir::new(&cache_dir, "test").unwrap();
            let recorded = record(&key, &Reads::default(), &[], &[], &build);
            cache.store(&key, recorded, vec![("log", Staged::Bytes(bytes))]).unwrap()
        };
        let log = format!("{}/kernels/common.h(12): warning: unused", root.display());
        assert_eq!(store(log.clone().into_bytes())[0].bytes, log.as_bytes());
        assert_eq!(cache.lookup(&key, 1).expect("its own checkout's")[0].bytes, log.as_bytes());
        assert!(cache.lookup(&key_of_copy, 1).is_none(), "another checkout would print this one's path");
        store(b"kernels/common.h(12): warning: unused".to_vec());
        assert!(cache.lookup(&key_of_copy, 1).is_some(), "relative names are shared");
    }

    #[test]
    fn a_file_changed_during_the_build_leaves_it_unrecorded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs::create_dir_all(root.join("kernels")).unwrap();
        let cache_dir = dir.path().join("cache");
        let key = CacheKey::new(&source(&root), b"src", b"", &["cc"], "");
        let build = BuildDir::new(&cache_dir, "test").unwrap();
        // written after the build began, as an edit while the compiler runs
        fs::write(root.join("kernels/h.h"), "edited").unwrap();
        let reads = Reads { files: vec![root.join("kernels/h.h")], absent: Vec::new() };
        let recorded = record(&key, &reads, &[], &[], &build);
        assert!(!recorded.settled);
        let cache = KernelCache::new(&cache_dir);
        let found = cache.store(&key, recorded, vec![("bin", Staged::Bytes(b"x".to_vec()))]).unwrap();
        assert_eq!(fs::read(&found[0].path).unwrap(), b"x", "the build's artifact is there for this run");
        assert!(cache.lookup(&key, 1).is_none(), "but no manifest names it");
    }
}

/// A repository of its own for the cache tests of every build: `repo/kernels/` in a
/// temporary folder, files beside the repository, the cache in `repo/target/kernel-cache`.
#[cfg(test)]
pub(crate) mod test_repo {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::backend::KernelSource;

    /// A kernel whose `__shared__` array is `TILE * EXTRA` floats, from a header in a subfolder
    /// of the include folder and one outside the repository: its shared-memory figure tells
    /// which header texts a build read.
    pub const TILE_KERNEL: &str = "#include \"sub/tile.h\"\n#include \"../../elsewhere/extra.h\"\n\
        extern \"C\" __global__ void tile(float* y) {\n  __shared__ float s[TILE * EXTRA];\n  s[threadIdx.x] = y[threadIdx.x];\n  \
        __syncthreads();\n  y[threadIdx.x] = s[(threadIdx.x + 1) % (TILE * EXTRA)];\n}\n";

    pub struct TempRepo {
        dir: tempfile::TempDir,
    }

    impl TempRepo {
        pub fn new() -> TempRepo {
            let repo = TempRepo { dir: tempfile::tempdir().unwrap() };
            fs::create_dir_all(repo.root().join("kernels")).unwrap();
            repo
        }

        pub fn root(&self) -> PathBuf {
            self.dir.path().join("repo")
        }

        pub fn cache(&self) -> PathBuf {
            self.root().join("target/kernel-cache")
        }

        /// Writes a file (`repo/...`, or beside the repository), then lets the clock move on: a
        /// file changed at the tick a build begins leaves that build unrecorded, as an edit
        /// during the build would.
        pub fn write(&self, path: &str, text: &str) {
            let path = self.dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }

        /// `repo/kernels/<name>.hip` with `text`, its one kernel named `kernel`.
        pub fn source(&self, name: &str, text: &str, kernel: &str) -> KernelSource {
            let display_path = format!("kernels/{name}.hip");
            self.write(&format!("repo/{display_path}"), text);
            KernelSource {
                path: self.root().join(&display_path),
                display_path,
                kernels: vec![kernel.into()],
                include_dirs: vec![self.root().join("kernels")],
            }
        }

        /// `TILE_KERNEL` as `kernels/<name>.hip`, with `TILE` and `EXTRA` as given.
        pub fn tile_source(&self, name: &str, tile: u32, extra: u32) -> KernelSource {
            self.write("repo/kernels/sub/tile.h", &format!("#define TILE {tile}\n"));
            self.write("elsewhere/extra.h", &format!("#define EXTRA {extra}\n"));
            self.source(name, TILE_KERNEL, "tile")
        }
    }

    /// Puts `bytes` at `path` as a new file: a library this process loaded stays mapped from
    /// its old file, which an in-place write would change under it.
    pub fn replace(path: &Path, bytes: &[u8]) {
        let staged = path.with_extension("damaged");
        fs::write(&staged, bytes).unwrap();
        fs::rename(&staged, path).unwrap();
    }

    /// The ways a cached artifact is damaged: truncated, one byte flipped, emptied (an empty
    /// one, such as a log with nothing to say, gets a byte).
    pub fn damages(whole: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
        if whole.is_empty() {
            return vec![("a byte added to an empty file", b"x".to_vec())];
        }
        let mut flipped = whole.to_vec();
        flipped[whole.len() / 2] ^= 0x20;
        vec![("truncated", whole[..whole.len() / 2].to_vec()), ("one byte flipped", flipped), ("emptied", Vec::new())]
    }
}
