//! The bad-input table (issue 6, and the fail-closed issue): each row breaks a copy of the
//! repository the way a user (or a hostile contract) would, runs the real binary on it, and
//! checks the exact outcome: the message names the file, the line and the key (or the record,
//! the control not run, the report refused, the flag), the good contract beside it still ran,
//! the exit status, that the report is whole JSON, and that nothing in the folder beside the
//! repository changed.

use std::path::{Path, PathBuf};

use crate::{contracts_command, copy_dir, output_of, root};

/// How a row breaks its copy of the repository. Texts are replaced in a copy of a real
/// file, so a row keeps meaning what it says when the real file changes (a replacement
/// that no longer applies fails the row).
enum Break {
    /// `contracts/<stem>_broken.toml`: `contracts/<stem>.toml` with `find` replaced. The name
    /// sorts after the original's, so a second contract for one op is the one refused.
    Contract { stem: &'static str, find: &'static str, replace: &'static [u8] },
    /// `controls/add_whole_blocks_only_broken.toml`: that control with `find` replaced, after
    /// `arrange` laid out what it names.
    Control { find: &'static str, replace: &'static str, arrange: fn(&Fixture) },
    /// `kernels/tf_softmax_stats.hip` with `find` replaced, its contract beside tf_add's.
    Kernel { find: &'static str, replace: &'static str },
    /// Whatever `arrange` lays out (links, folders, device nodes); it returns the file the
    /// error names and that file's text, where there is one. Controls are not run.
    Arranged { arrange: Arrange },
    /// The good repository, run with these flags; without `--root` when `root` is false, from
    /// the folder beside the repository (no `contracts/` there or above).
    Flags { args: &'static [&'static str], root: bool },
    /// `kernels/tf_softmax_stats.hip` made to start its sums at `SUM_START` from
    /// `kernels/stats/start.h`, a header in a subfolder of the include folder: a first run
    /// with `first` there, then the run checked with `second`.
    EditedHeader { first: &'static str, second: &'static str },
    /// A first run fills a kernel cache folder of the row's own with tf_add's and
    /// tf_softmax_stats's libraries; `damage` breaks them (and gives back each damaged file
    /// with its bytes before); the run checked uses the cache as it is left.
    DamagedCache { damage: fn(&Path) -> Vec<Damaged> },
    /// `--cache-dir` names `<copy>/cache`, which `make` makes unusable for a cache.
    UnusableCache { make: fn(&Path) },
}

/// A cache file a row damaged, and its bytes before.
type Damaged = (PathBuf, Vec<u8>);

/// Lays out a row's repository; returns the file its error names, and that file's text.
type Arrange = fn(&Fixture) -> Option<(String, Vec<u8>)>;

enum Expect {
    /// `<file>:<line>: error: `<key>`: <message>`, the line being where `at` is in the broken
    /// file, and the message containing `words`.
    LoadError { key: &'static str, at: &'static str, words: &'static str },
    /// `<op> (<record>) ERROR: ...` containing `words`, and under it, indented, a line of the
    /// compiler's log containing all of `log`.
    RecordError { record: &'static str, words: &'static [&'static str], log: &'static [&'static str] },
    /// Under `N control(s) not run on <arch>:`, the line `    <file> (<planted>): <reason>`
    /// containing `words`; the run is green.
    NotRun { file: &'static str, words: &'static str },
    /// The run's lines and SUMMARY print, the report is not written (`NOT written to r.json:
    /// it is <...words...>`), what stands at its path is as it was, and the exit status is 2.
    ReportRefused { words: &'static str },
    /// A green run whose report is written whole: the row is about what must not happen.
    Written,
    /// Exit 2 before anything ran, standard error saying `words`, no report.
    Refused { words: &'static str },
    /// `tf_softmax_stats (<record>) FAIL at ...` containing `words`.
    RecordFail { record: &'static str, words: &'static [&'static str] },
    /// Every record passes: what was broken is mended without a word (exit 0).
    Pass,
    /// Nothing runs (exit 2, no report): `contracts: error: kernel cache folder <path>: ...`
    /// on standard error, containing `words`.
    Fatal { words: &'static str },
}

struct Row {
    name: &'static str,
    breaks: Break,
    expect: Expect,
    /// The broken file is the only contract: nothing can run.
    alone: bool,
}

const fn contract(
    name: &'static str,
    stem: &'static str,
    find: &'static str,
    replace: &'static [u8],
    key: &'static str,
    at: &'static str,
    words: &'static str,
) -> Row {
    Row { name, breaks: Break::Contract { stem, find, replace }, expect: Expect::LoadError { key, at, words }, alone: false }
}

fn nothing(_: &Fixture) {}

const fn control(
    name: &'static str,
    find: &'static str,
    replace: &'static str,
    key: &'static str,
    at: &'static str,
    words: &'static str,
) -> Row {
    control_with(name, find, replace, nothing, key, at, words)
}

const fn control_with(
    name: &'static str,
    find: &'static str,
    replace: &'static str,
    arrange: fn(&Fixture),
    key: &'static str,
    at: &'static str,
    words: &'static str,
) -> Row {
    Row { name, breaks: Break::Control { find, replace, arrange }, expect: Expect::LoadError { key, at, words }, alone: false }
}

const fn arranged(name: &'static str, arrange: Arrange, expect: Expect) -> Row {
    Row { name, breaks: Break::Arranged { arrange }, expect, alone: false }
}

const fn flags(name: &'static str, args: &'static [&'static str], root: bool, words: &'static str) -> Row {
    Row { name, breaks: Break::Flags { args, root }, expect: Expect::Refused { words }, alone: false }
}

const TF_ADD: &str = "tf_add";
/// An op whose [kernel] and [tensors] the rows break.
const TF_CAST: &str = "tf_cast";
/// The one op whose launcher is Rust (a library call): its contract has no [kernel].
const PROJECTION: &str = "projection_bf16";
/// Ops whose contracts say what their kernels need: conditions, dtype groups, parameter
/// limits, a derived tensor.
const TF_SUM_PARTIALS: &str = "tf_sum_partials";
const TF_KV_APPEND: &str = "tf_kv_append";
const TF_ROPE: &str = "tf_rope";

/// tf_add's policy for non-finite inputs and its reason, as its contract states them.
const NONFINITE_POLICY: &str = "policy = \"propagate\"\nreason = \"\"\"one f32 add, IEEE arithmetic as in the oracle: a NaN gives NaN, \
                                inf + -inf gives NaN, an infinity plus a finite value that infinity\"\"\"";

const CONTROL_SOURCE: &str = "source = \"add_whole_blocks_only.hip\"";

/// The folder beside the repository: what the hostile rows point at, and what no run may change.
const OUTSIDE: &[(&str, &[u8])] = &[
    ("secret.h", b"int secret_header;\n"),
    ("report.json", b"a file the report must not overwrite\n"),
    ("dir/k.hip", b"// a kernel outside the repository\n"),
];

/// `controls/<at>` a symlink to `outside/<to>`.
fn link_control_out(f: &Fixture, at: &str, to: &str) {
    std::os::unix::fs::symlink(f.outside.join(to), f.base.join("controls").join(at)).unwrap();
}

/// `controls/escape.hip`: the good control's kernel with `line` first.
fn control_kernel_starting(f: &Fixture, line: &str) {
    let text = [line.as_bytes(), b"\n", &f.real("controls/add_whole_blocks_only.hip")].concat();
    std::fs::write(f.base.join("controls/escape.hip"), text).unwrap();
}

/// The report's path made something other than a regular file by `make`.
fn report_path(f: &Fixture, make: impl FnOnce(&Path)) -> Option<(String, Vec<u8>)> {
    make(&f.report());
    None
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// A character device node (the null device's numbers) where the OS lets this process make
/// one (as root), else a named pipe: either is refused as not a regular file.
fn device_node_or_fifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call
    let made = unsafe { libc::mknod(name.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 3)) } == 0;
    if !made {
        mkfifo(path);
    }
}

fn new_rows() -> Vec<Row> {
    vec![
        // confinement: what a contract or control names resolves inside the repository
        control("control source climbing out to /etc", CONTROL_SOURCE, "source = \"../../etc/passwd\"", "source", "source = ", "must be a file beside the control"),
        control_with(
            "control source a symlink out of the repository",
            CONTROL_SOURCE,
            "source = \"linked.hip\"",
            |f| link_control_out(f, "linked.hip", "dir/k.hip"),
            "source",
            "source = ",
            "`controls/linked.hip` resolves outside the repository and the folders given on the command line (to ",
        ),
        control_with(
            "control source in a folder linked out of the repository",
            CONTROL_SOURCE,
            "source = \"out/k.hip\"",
            |f| link_control_out(f, "out", "dir"),
            "source",
            "source = ",
            "`controls/out/k.hip` resolves outside the repository",
        ),
        control_with(
            "control kernel including a header outside by ..",
            CONTROL_SOURCE,
            "source = \"escape.hip\"",
            |f| control_kernel_starting(f, "#include \"../../outside/secret.h\""),
            "source",
            "source = ",
            "controls/escape.hip:1 includes `../../outside/secret.h`, which resolves outside the repository (to ",
        ),
        control_with(
            "control kernel including an absolute path",
            CONTROL_SOURCE,
            "source = \"escape.hip\"",
            |f| control_kernel_starting(f, "#include \"/etc/hostname\""),
            "source",
            "source = ",
            "controls/escape.hip:1 includes `/etc/hostname`, an absolute path",
        ),
        arranged(
            "op kernel a symlink out of the repository",
            |f| {
                let kernel = f.base.join("kernels/tf_softmax_stats.hip");
                std::fs::rename(&kernel, f.outside.join("tf_softmax_stats.hip")).unwrap();
                std::os::unix::fs::symlink(f.outside.join("tf_softmax_stats.hip"), &kernel).unwrap();
                f.copy("contracts/tf_softmax_stats.toml");
                Some(("contracts/tf_softmax_stats.toml".into(), f.real("contracts/tf_softmax_stats.toml")))
            },
            Expect::LoadError { key: "kernel.source", at: "source = ", words: "`kernels/tf_softmax_stats.hip` resolves outside the repository" },
        ),
        arranged(
            "contract file a symlink out of the repository",
            |f| {
                std::fs::write(f.outside.join("tf_cast.toml"), f.real("contracts/tf_cast.toml")).unwrap();
                std::os::unix::fs::symlink(f.outside.join("tf_cast.toml"), f.base.join("contracts/tf_cast.toml")).unwrap();
                Some(("contracts/tf_cast.toml".into(), f.real("contracts/tf_cast.toml")))
            },
            Expect::LoadError { key: "(file)", at: "", words: "`contracts/tf_cast.toml` resolves outside the repository" },
        ),
        // the report: a regular file, or nothing yet
        arranged(
            "report path a symlink out of the repository",
            |f| report_path(f, |p| std::os::unix::fs::symlink(f.outside.join("report.json"), p).unwrap()),
            Expect::ReportRefused { words: "a symbolic link; the report is written only to a regular file, never through a link" },
        ),
        arranged(
            "report path a folder",
            |f| report_path(f, |p| std::fs::create_dir(p).unwrap()),
            Expect::ReportRefused { words: "a folder, not a regular file" },
        ),
        arranged("report path a device node", |f| report_path(f, device_node_or_fifo), Expect::ReportRefused { words: ", not a regular file" }),
        arranged("report path a named pipe", |f| report_path(f, mkfifo), Expect::ReportRefused { words: "a named pipe, not a regular file" }),
        arranged(
            "a symlink planted at the report's old temporary name",
            |f| {
                std::os::unix::fs::symlink(f.outside.join("report.json"), f.base.join("r.json.partial")).unwrap();
                None
            },
            Expect::Written,
        ),
        // names and texts: plain printable text in one line
        control("bug with a line break", "bug = \"assumes", "bug = \"fine\\nassumes", "bug", "bug = ", "holds a line break (U+000A)"),
        control("bug with a terminal escape", "bug = \"assumes", "bug = \"\\u001b[31massumes", "bug", "bug = ", "holds an escape (U+001B"),
        control(
            "control record with a bidirectional override",
            "record = \"f16\"",
            "record = \"f16\\u202e\"",
            "record",
            "record = ",
            "holds a bidirectional control (U+202E)",
        ),
        contract("record name with NUL", TF_ADD, "name = \"f16\"", b"name = \"f16\\u0000\"", "record[1].name", "name = \"f16", "holds NUL (U+0000)"),
        contract("op with a terminal escape", TF_ADD, "op = \"tf_add\"", b"op = \"tf_add\\u001b[2J\"", "op", "op = ", "holds an escape (U+001B"),
        contract(
            "finding reason with a line break",
            TF_ADD,
            "[reference]",
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\ntensor = \"out\"\nmatches = \"differ\"\nreason = \"one\\ntwo\"\n\n[reference]",
            "finding[0].reason",
            "reason = \"one",
            "holds a line break (U+000A)",
        ),
        // smaller holes
        flags("--only naming an op that does not exist beside one that does", &["--only", "tf_add", "--only", "tf_nope"], true, "--only `tf_nope`: no such op"),
        flags(
            "no --root and no contracts/ in the current folder or above",
            &[],
            false,
            "no contracts/ folder in the current folder (",
        ),
        control_with(
            "control planted at seams for an op whose rows are not independent",
            "contract = \"tf_add\"\nrecord = \"f16\"\ngate = \"repeat\"",
            "contract = \"tf_kv_append\"\nrecord = \"f16 rows, f16 cache\"\ngate = \"seams\"",
            |f| f.copy("contracts/tf_kv_append.toml"),
            "gate",
            "gate = ",
            "contracts/tf_kv_append.toml says its seams are `none`: gate 5 never runs for it",
        ),
        control("control parameter the op does not have", CONTROL_SOURCE, "source = \"add_whole_blocks_only.hip\"\nparams = { chunk = 0 }", "params.chunk", "params = ", "op tf_add has no parameter `chunk` (its parameters: none)"),
        contract("no word on seams", TF_ADD, "[seams]\n# elementwise: a row of out is its rows of a and b alone\naxis = \"rows\"\n", b"", "seams", "op = ", "no statement on seams"),
        contract(
            "seams axis that is not each tensor's first dimension",
            TF_ADD,
            "axis = \"rows\"",
            b"axis = \"k\"",
            "seams.axis",
            "axis = ",
            "tensor `a` (rows, k) uses `k` other than as exactly its first dimension",
        ),
        Row {
            name: "control whose gate does not run on this backend",
            breaks: Break::Control { find: "gate = \"repeat\"", replace: "gate = \"limits\"", arrange: nothing },
            expect: Expect::NotRun { file: "controls/add_whole_blocks_only_broken.toml", words: "(limits): gate limits does not run on host-" },
            alone: false,
        },
        contract(
            "int range wider than i64",
            TF_ADD,
            "b = \"normal(0, 1)",
            b"b = \"int(-9223372036854775807, 9223372036854775807)",
            "inputs.b",
            "b = \"int",
            "is wider than i64 holds (its width 9223372036854775807 - -9223372036854775807 overflows)",
        ),
        contract("int bound past i64", TF_ADD, "b = \"normal(0, 1)", b"b = \"int(0, 9223372036854775808)", "inputs.b", "b = \"int", "out of range"),
        Row {
            name: "header in a subfolder edited between two runs",
            breaks: Break::EditedHeader { first: "#define SUM_START 0.0f\n", second: "#define SUM_START 1.0f\n" },
            // every thread's sum starts at 1: the edited header's behaviour, not the cached library's
            expect: Expect::RecordFail { record: "f32 scores", words: &["tile_sum", "got 257.0", "want 1.000"] },
            alone: false,
        },
        Row {
            name: "truncated cached libraries",
            breaks: Break::DamagedCache { damage: truncate_libraries },
            expect: Expect::Pass,
            alone: false,
        },
        Row {
            name: "a byte flipped in a cached library",
            breaks: Break::DamagedCache { damage: flip_a_byte },
            expect: Expect::Pass,
            alone: false,
        },
        Row {
            name: "two cached libraries swapped",
            breaks: Break::DamagedCache { damage: swap_libraries },
            expect: Expect::Pass,
            alone: false,
        },
        Row {
            name: "a cache folder that is a file",
            breaks: Break::UnusableCache { make: |path| std::fs::write(path, "not a folder").unwrap() },
            expect: Expect::Fatal { words: "it is a file, not a folder" },
            alone: false,
        },
        Row {
            name: "a cache folder without write permission",
            breaks: Break::UnusableCache { make: read_only_folder },
            expect: Expect::Fatal { words: "cannot write in it: Permission denied" },
            alone: false,
        },
    ]
}

/// The cached libraries of the row's two kernels, tf_add's first.
fn libraries(cache: &Path) -> Vec<PathBuf> {
    let of = |stem: &str| {
        let found: Vec<PathBuf> = std::fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "so"))
            .filter(|p| p.file_name().unwrap().to_str().unwrap().rsplit_once('-').is_some_and(|(s, _)| s == stem))
            .collect();
        assert_eq!(found.len(), 1, "one library of {stem} in {}: {found:?}", cache.display());
        found[0].clone()
    };
    vec![of("tf_add"), of("tf_softmax_stats")]
}

/// Puts `bytes` at `path`, giving back the path and the bytes it had.
fn damage(path: &Path, bytes: &[u8]) -> Damaged {
    let before = std::fs::read(path).unwrap();
    std::fs::write(path, bytes).unwrap();
    (path.to_path_buf(), before)
}

fn truncate_libraries(cache: &Path) -> Vec<Damaged> {
    libraries(cache).iter().map(|p| damage(p, &std::fs::read(p).unwrap()[..1000])).collect()
}

fn flip_a_byte(cache: &Path) -> Vec<Damaged> {
    let library = &libraries(cache)[0];
    let mut bytes = std::fs::read(library).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    vec![damage(library, &bytes)]
}

/// tf_add's library holds tf_softmax_stats's bytes and the other way round.
fn swap_libraries(cache: &Path) -> Vec<Damaged> {
    let both = libraries(cache);
    let (add, stats) = (std::fs::read(&both[0]).unwrap(), std::fs::read(&both[1]).unwrap());
    vec![damage(&both[0], &stats), damage(&both[1], &add)]
}

/// A folder no one may write in. Permission bits do not stop root, so the run is then
/// started without the capabilities that override them (`run_checked`).
fn read_only_folder(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).unwrap();
}

/// Runs the binary; as root, without CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER
/// (dropped from the bounding set before exec, so the binary and its children never get
/// them), so that a folder's permission bits hold for it as for anyone.
fn run_checked(cwd: &Path, args: &[&str], marker: &str) -> (i32, Vec<String>, String) {
    use std::os::unix::process::CommandExt;
    let mut command = contracts_command(args);
    command.current_dir(cwd).env(crate::RUN_MARKER, marker);
    if unsafe { libc::geteuid() } == 0 {
        // linux/capability.h: CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2, CAP_FOWNER 3
        let drop_overrides = || {
            for capability in [1, 2, 3] {
                if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        };
        unsafe { command.pre_exec(drop_overrides) };
    }
    output_of(command)
}

fn rows() -> Vec<Row> {
    let mut rows = vec![
        contract("TOML syntax error", TF_ADD, "name = \"f16\"", b"name = \"f16", "name", "name = \"f16", "string"),
        contract("unknown key", TF_ADD, "about = ", b"colour = \"red\"\nabout = ", "colour", "colour", "unknown field `colour`"),
        contract(
            "wrong value type",
            TF_ADD,
            "{ rows = 4, k = 64 }",
            b"{ rows = 4, k = \"64\" }",
            "shapes.cases[2].k",
            "k = \"64\"",
            "invalid type: string \"64\", expected i64",
        ),
        contract(
            "unknown dtype",
            TF_ADD,
            "out = \"f16\"",
            b"out = \"fp8\"",
            "record[1].dtypes.out",
            "out = \"fp8\"",
            "unknown dtype `fp8`",
        ),
        contract(
            "zero shape",
            TF_ADD,
            "{ rows = 4, k = 64 }",
            b"{ rows = 4, k = 0 }",
            "shapes.cases[2].k",
            "k = 0",
            "`k` = 0 must be positive",
        ),
        contract(
            "negative shape",
            TF_ADD,
            "{ rows = 4, k = 64 }",
            b"{ rows = 4, k = -64 }",
            "shapes.cases[2].k",
            "k = -64",
            "must be positive",
        ),
        contract("shape beyond i64", TF_ADD, "{ rows = 4, k = 64 }", b"{ rows = 4, k = 99999999999999999999 }", "k", "k = 999", "integer"),
        contract(
            "shape of i64::MAX",
            TF_ADD,
            "{ rows = 4, k = 64 }",
            b"{ rows = 4, k = 9223372036854775807 }",
            "shapes.cases[2]",
            "k = 9223372036854775807",
            "over the 1024 MiB cap",
        ),
        contract(
            "tensor over the memory cap",
            TF_ADD,
            "{ rows = 16, k = 4096 }",
            b"{ rows = 16384, k = 16385 }",
            "shapes.cases[4]",
            "rows = 16384",
            "tensor `a` of shape [16384, 16385] is over the 1024 MiB cap",
        ),
        contract(
            "shape expression dividing by zero",
            "tf_argmax",
            "vocab / 4 + 1)",
            b"vocab / (vocab / 2000) + 1)",
            "inputs.logits",
            "logits = \"int(",
            "division by zero in shapes.cases[0]",
        ),
        contract(
            "two contracts for one op",
            TF_ADD,
            "op = \"tf_add\"",
            b"# the same op again\nop = \"tf_add\"",
            "op",
            "op = ",
            "already has a contract",
        ),
        contract("missing required key", TF_ADD, "oracle = \"add\"\n", b"", "reference", "[reference]", "names what the outputs are checked against"),
        // a contract without [kernel] names an op of the engine's own: one a library serves
        contract("unknown op", PROJECTION, "op = \"projection_bf16\"", b"op = \"projection_bf17\"", "op", "op = ", "unknown op `projection_bf17`"),
        // an op described as data (tf_cast's contract): its [kernel] and [tensors]
        contract(
            "a kernel argument naming no tensor",
            TF_CAST,
            "args = [\"in\", \"dtype(in)\"",
            b"args = [\"inp\", \"dtype(in)\"",
            "kernel.args[0]",
            "args = ",
            "no tensor `inp` in [tensors] (there: in, out)",
        ),
        contract("a kernel argument of no form", TF_CAST, "\"int(rows)\"", b"\"float(rows)\"", "kernel.args[2]", "args = ", "is no kernel argument"),
        contract("a kernel argument naming no parameter", "tf_rms", "\"param(eps)\"", b"\"param(epsilon)\"", "kernel.args[5]", "args = ", "no parameter `epsilon` in kernel.params"),
        contract("a parameter of no kind", "tf_rms", "kind = \"float\"", b"kind = \"double\"", "kernel.params.eps", "params = ", "kind `double`"),
        contract("a tensor whose name is not a name", TF_CAST, "\nin = { role", b"\n\"in put\" = { role", "tensors.in put", "\"in put\" = ", "`in put` is not a name"),
        contract("a tensor role that is none", TF_CAST, "in = { role = \"input\"", b"in = { role = \"inout\"", "tensors.in.role", "in = ", "role `inout`"),
        contract(
            "[kernel] for an op the engine launches itself",
            TF_CAST,
            "op = \"tf_cast\"",
            b"op = \"projection_bf16\"",
            "kernel",
            "[kernel]",
            "is an op of the engine with a launcher of its own",
        ),
        contract("a grid of no dimension", TF_CAST, "grid = [\"ceil_div(rows * k, 256)\"]", b"grid = []", "kernel.grid", "grid = ", "one to three dimensions"),
        contract(
            "a kernel source climbing back in its middle",
            TF_CAST,
            "source = \"tf_cast.hip\"",
            b"source = \"lib/../tf_cast.hip\"",
            "kernel.source",
            "source = ",
            "`lib/../tf_cast.hip`: `..` or `.` in its middle",
        ),
        contract(
            "[kernel] without [tensors]",
            TF_CAST,
            "[tensors]\nin = { role = \"input\", dtypes = [\"f32\", \"f16\", \"bf16\"], shape = \"rows, k\" }\nout = { role = \"output\", dtypes = [\"f32\", \"f16\", \"bf16\"], shape = \"rows, k\" }\n",
            b"",
            "tensors",
            "[kernel]",
            "needs [tensors] too",
        ),
        // what a kernel needs of a launch: its contract's conditions, dtype groups, parameter
        // limits, and the tensors the engine derives for it
        contract(
            "a condition that is no comparison",
            TF_SUM_PARTIALS,
            "requires = [\"tiles <= 1024\"]",
            b"requires = [\"tiles =< 1024\"]",
            "kernel.requires[0]",
            "requires = ",
            "`=<` is no comparison (==, !=, <, <=, >, >=)",
        ),
        contract(
            "a condition on a float parameter",
            TF_ROPE,
            "requires = [\"d % 2 == 0\"]",
            b"requires = [\"d % 2 == 0\", \"theta > 1\"]",
            "kernel.requires[1]",
            "requires = ",
            "`theta` is a float parameter: a condition reads shape symbols and int parameters",
        ),
        contract(
            "a case the kernel's conditions refuse",
            TF_SUM_PARTIALS,
            "requires = [\"tiles <= 1024\"]",
            b"requires = [\"tiles <= 4\"]",
            "shapes.cases[1]",
            "{ rows = 3, tiles = 5, d = 100 }",
            "kernel.requires[0]: `tiles <= 4` does not hold: tiles = 5",
        ),
        contract(
            "a dtype group of one tensor",
            TF_KV_APPEND,
            "same_dtype = [[\"k_cache_in\", \"k_cache\"]",
            b"same_dtype = [[\"k_cache_in\"]",
            "kernel.same_dtype[0]",
            "same_dtype = ",
            "a group names two tensors or more that take one dtype",
        ),
        contract(
            "a dtype group naming no tensor",
            TF_KV_APPEND,
            "[\"v_cache_in\", \"v_cache\"]]",
            b"[\"v_cache_in\", \"v_cahce\"]]",
            "kernel.same_dtype[1]",
            "same_dtype = ",
            "no tensor `v_cahce` in [tensors] given by the caller (there: k_new, v_new, slots, k_cache_in, v_cache_in, k_cache, v_cache)",
        ),
        contract(
            "a record whose dtypes a dtype group refuses",
            TF_KV_APPEND,
            "k_cache_in = \"f16\", v_cache_in = \"f16\", k_cache = \"f16\"",
            b"k_cache_in = \"f16\", v_cache_in = \"f16\", k_cache = \"bf16\"",
            "record[0].dtypes",
            "[[record]]\nname = \"f32 rows, f16 cache\"",
            "record `f32 rows, f16 cache`: kernel.same_dtype[0]: `k_cache_in` is f16 but `k_cache` is bf16: they take one dtype",
        ),
        contract(
            "a parameter's values that are no list",
            TF_ROPE,
            "values = [0, 1]",
            b"values = []",
            "kernel.params.layout.values",
            "params = ",
            "a list of one number or more",
        ),
        contract(
            "a parameter's min that is no number",
            "tf_copy_cols",
            "min = 0",
            b"min = true",
            "kernel.params.start.min",
            "params = ",
            "`min` is a finite number, not `true`",
        ),
        contract(
            "a parameter's max that is no number",
            "tf_copy_cols",
            "min = 0",
            b"min = 0, max = \"k\"",
            "kernel.params.start.max",
            "params = ",
            "`max` is a finite number, not `\"k\"`",
        ),
        contract(
            "a parameter's above that is no number",
            TF_ROPE,
            "above = 1",
            b"above = \"1\"",
            "kernel.params.theta.above",
            "params = ",
            "`above` is a finite number, not `\"1\"`",
        ),
        contract(
            "a parameter's below that is no number",
            TF_ROPE,
            "above = 1",
            b"above = 1, below = [2]",
            "kernel.params.theta.below",
            "params = ",
            "`below` is a finite number, not `[2]`",
        ),
        contract(
            "a parameter limit of no kind",
            TF_ROPE,
            "above = 1",
            b"over = 1",
            "kernel.params.theta",
            "params = ",
            "unknown key `over` (a parameter has kind, default, values, min, max, above, below)",
        ),
        contract(
            "a default its limits refuse",
            TF_ROPE,
            "default = 10000, above = 1",
            b"default = 1, above = 1",
            "kernel.params.theta.default",
            "params = ",
            "the default of parameter `theta` = 1 is not above 1 (its `above`)",
        ),
        contract(
            "a record's parameter its limits refuse",
            TF_ROPE,
            "params = { layout = 1 }",
            b"params = { layout = 2 }",
            "record[3].params.layout",
            "params = { layout = 2 }",
            "parameter `layout` = 2 is not one of 0, 1 (its `values`)",
        ),
        contract(
            "a derived tensor without its table",
            TF_ROPE,
            ", from = \"rope_turns(theta, d)\"",
            b"",
            "tensors.turns.from",
            "turns = ",
            "a derived tensor names the table that computes it",
        ),
        contract(
            "a derived tensor from an unknown table",
            TF_ROPE,
            "from = \"rope_turns(theta, d)\"",
            b"from = \"rope_freqs(theta, d)\"",
            "tensors.turns.from",
            "turns = ",
            "unknown table `rope_freqs` (the engine computes rope_turns(theta, d))",
        ),
        contract(
            "a derived tensor's table short of an argument",
            TF_ROPE,
            "from = \"rope_turns(theta, d)\"",
            b"from = \"rope_turns(theta)\"",
            "tensors.turns.from",
            "turns = ",
            "rope_turns(theta, d) takes 2 arguments, not 1",
        ),
        contract(
            "a derived tensor's table reading a float parameter in an expression",
            TF_ROPE,
            "from = \"rope_turns(theta, d)\"",
            b"from = \"rope_turns(theta * 2, d)\"",
            "tensors.turns.from",
            "turns = ",
            "reads `theta`, a float parameter: pass a float parameter alone",
        ),
        contract(
            "a derived tensor of two dtypes",
            TF_ROPE,
            "dtypes = [\"f32\"], shape = \"d / 2\"",
            b"dtypes = [\"f32\", \"f16\"], shape = \"d / 2\"",
            "tensors.turns.dtypes",
            "turns = ",
            "a derived tensor has one dtype, its table's",
        ),
        contract(
            "an input computed from a table",
            TF_ROPE,
            "shape = \"rows\" }",
            b"shape = \"rows\", from = \"rope_turns(theta, d)\" }",
            "tensors.positions.from",
            "positions = ",
            "only a `derived` tensor is computed `from` a table",
        ),
        contract(
            "unknown tolerance model",
            TF_ADD,
            "tolerance = \"exact\"",
            b"tolerance = \"close\"",
            "reference.tolerance",
            "tolerance = ",
            "unknown tolerance",
        ),
        contract(
            "rtol without a reason",
            TF_ADD,
            "name = \"f16\"",
            b"name = \"f16\"\ntolerance = \"rtol=1e-3\"",
            "record[1].tolerance",
            "tolerance = \"rtol",
            "needs a stated reason",
        ),
        contract(
            "no policy for non-finite inputs",
            TF_ADD,
            "[nonfinite]\npolicy = \"propagate\"\nreason = \"\"\"one f32 add, IEEE arithmetic as in the oracle: a NaN gives NaN, \
             inf + -inf gives NaN, an infinity plus a finite value that infinity\"\"\"\n",
            b"",
            "nonfinite",
            "",
            "no policy for non-finite inputs",
        ),
        contract(
            "unspecified non-finite policy without a reason",
            TF_ADD,
            NONFINITE_POLICY,
            b"policy = \"unspecified\"",
            "nonfinite.policy",
            "policy = ",
            "`unspecified` needs a stated reason",
        ),
        contract(
            "ignore where the oracle does not define it",
            TF_ADD,
            "policy = \"propagate\"",
            b"policy = \"ignore\"",
            "nonfinite.policy",
            "policy = ",
            "oracle `add` does not define its value with NaN inputs left out",
        ),
        contract(
            "unknown input modifier row",
            TF_ADD,
            "b = \"normal(0, 1)",
            b"b = \"normal(0, 1) | negative_row(first)",
            "inputs.b",
            "b = \"normal",
            "`first` is not a row index",
        ),
        contract(
            "gpu_only without its reason",
            TF_ADD,
            "{ rows = 4, k = 64 }",
            b"{ rows = 4, k = 64, gpu_only = true }",
            "shapes.cases[2].gpu_only",
            "gpu_only = true",
            "says in one line why only a GPU runs the case",
        ),
        contract(
            "ulp count over 64 without a reason",
            TF_ADD,
            "name = \"f16\"",
            b"name = \"f16\"\ntolerance = \"ulp(100)\"",
            "record[1].tolerance",
            "tolerance = \"ulp",
            "needs a stated reason (more than 64 ulp is loose)",
        ),
        contract(
            "ulp count past what bf16 can mean",
            TF_ADD,
            "name = \"bf16\"",
            b"name = \"bf16\"\ntolerance = \"ulp(1000000)\"\nreason = \"a typo\"",
            "record[2].tolerance",
            "tolerance = \"ulp",
            "ulp(1000000) means nothing for bf16: 128 ulps span a whole binade (a factor of 2), so at most ulp(127)",
        ),
        contract(
            "a tolerance on an integer output",
            "tf_argmax",
            "tolerance = \"exact\"",
            b"tolerance = \"ulp(1)\"",
            "reference.tolerance",
            "tolerance = ",
            "integer outputs are compared `exact`",
        ),
        contract(
            "rtol that accepts zero",
            TF_ADD,
            "tolerance = \"exact\"",
            b"tolerance = \"rtol=1\"",
            "reference.tolerance",
            "tolerance = ",
            "accepts 0 for every value",
        ),
        contract(
            "atol loose against the output",
            TF_ADD,
            "tolerance = \"exact\"",
            b"tolerance = \"atol=0.05\"",
            "reference.tolerance",
            "tolerance = ",
            "atol=5e-2 is loose for `out` of record `f32`: above 1e-3 times the oracle's typical |out|",
        ),
        contract(
            "unknown oracle",
            TF_ADD,
            "oracle = \"add\"",
            b"oracle = \"sum\"",
            "reference.oracle",
            "oracle = ",
            "unknown oracle `sum`",
        ),
        contract(
            "unknown input generator",
            TF_ADD,
            "b = \"normal(0, 1)",
            b"b = \"gauss(0, 1)",
            "inputs.b",
            "b = \"gauss",
            "unknown generator `gauss`",
        ),
        contract(
            "an input for an output tensor",
            TF_ADD,
            "b = \"normal(0, 1) | zero_row(1) | subnormal_row(2) | near_max_row(last)\"",
            b"b = \"normal(0, 1)\"\nout = \"normal(0, 1)\"",
            "inputs.out",
            "out = \"normal",
            "an output of tf_add",
        ),
        contract(
            "no generator for an input",
            TF_ADD,
            "b = \"normal(0, 1) | zero_row(1) | subnormal_row(2) | near_max_row(last)\"\n",
            b"",
            "inputs",
            "[inputs]",
            "no generator for input tensor `b`",
        ),
        contract(
            "duplicate record names",
            TF_ADD,
            "name = \"f16\"",
            b"name = \"f32\"",
            "record[1].name",
            "name = \"f32\"\ndtypes = { a = \"f16\"",
            "used twice (record[0] has it too)",
        ),
        contract("empty file", TF_ADD, "", b"", "op", "", "missing field `op`"),
        contract("not UTF-8", TF_ADD, "about = \"Elementwise", b"about = \"Caf\xe9: elementwise", "about", "about = ", "not UTF-8"),
        contract(
            "finding without a tensor",
            TF_ADD,
            "[reference]",
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\nmatches = \"differ\"\nreason = \"r\"\n\n[reference]",
            "finding[0].tensor",
            "[[finding]]",
            "a finding names the tensor it covers",
        ),
        contract(
            "finding without matches",
            TF_ADD,
            "[reference]",
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\ntensor = \"out\"\nreason = \"r\"\n\n[reference]",
            "finding[0].matches",
            "[[finding]]",
            "a piece of the failure's message",
        ),
        contract(
            "finding for an unknown tensor",
            TF_ADD,
            "[reference]",
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\ntensor = \"y\"\nmatches = \"differ\"\nreason = \"r\"\n\n[reference]",
            "finding[0].tensor",
            "tensor = \"y\"",
            "unknown tensor `y`: op tf_add has a, b, out",
        ),
        contract(
            "finding for a case out of range",
            TF_ADD,
            "[reference]",
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\ntensor = \"out\"\nmatches = \"differ\"\ncases = [0, 8]\nreason = \"r\"\n\n[reference]",
            "finding[0].cases",
            "cases = [0, 8]",
            "case 8 is out of range: [shapes].cases has 8 (0 to 7)",
        ),
        control(
            "control naming a missing contract",
            "contract = \"tf_add\"",
            "# a typo\ncontract = \"tf_ad\"",
            "contract",
            "contract = ",
            "no op `tf_ad` in the engine",
        ),
        control("control naming a missing record", "record = \"f16\"", "record = \"f8\"", "record", "record = ", "no record `f8`"),
        control("control naming an unknown gate", "gate = \"repeat\"", "gate = \"speed\"", "gate", "gate = ", "speed"),
        control(
            "control source outside the folder",
            "source = \"add_whole_blocks_only.hip\"",
            "source = \"../kernels/tf_add.hip\"",
            "source",
            "source = ",
            "must be a file beside the control",
        ),
        control(
            "control source absolute",
            "source = \"add_whole_blocks_only.hip\"",
            "source = \"/etc/passwd\"",
            "source",
            "source = ",
            "must be a file beside the control",
        ),
        control("control source that does not exist", "only.hip\"", "only_v2.hip\"", "source", "source = ", "no such file"),
        control(
            "control with an empty bug",
            "bug = \"assumes",
            "bug = \"\"\n# \"assumes",
            "bug",
            "bug = ",
            "the bug must be said in one line",
        ),
        Row {
            name: "kernel symbol missing from its module",
            breaks: Break::Kernel { find: "void tf_softmax_stats(", replace: "void tf_softmax_stats_v2(" },
            expect: Expect::RecordError {
                record: "f32 scores",
                words: &["kernels/tf_softmax_stats.hip (host build) has no symbol `tf_softmax_stats`", "did you mean"],
                log: &[],
            },
            alone: false,
        },
        Row {
            name: "kernel that does not compile",
            breaks: Break::Kernel { find: "float sum = 0.0f;", replace: "float sum = 0.0f" },
            expect: Expect::RecordError {
                record: "f32 scores",
                words: &["compiling", "kernels/tf_softmax_stats.hip"],
                log: &["kernels/tf_softmax_stats.hip:", ": error: expected"],
            },
            alone: false,
        },
        Row {
            alone: true,
            ..contract("the only contract broken", PROJECTION, "op = \"projection_bf16\"", b"op = \"projection_bf17\"", "op", "op = ", "unknown op")
        },
    ];
    rows.extend(new_rows());
    rows.extend(domain_rows());
    rows.extend(own_kernel_rows());
    rows
}

/// tf_add's contract as `tf_add_v2`, replacing tf_add, its [reference] given by `reference`.
fn replacing_tf_add(f: &Fixture, reference: &str) -> Option<(String, Vec<u8>)> {
    let text = replaced(&f.real("contracts/tf_add.toml"), "op = \"tf_add\"", b"op = \"tf_add_v2\"");
    let text = replaced(&text, "oracle = \"add\"\ntolerance = \"exact\"", reference.as_bytes());
    std::fs::write(f.base.join("contracts/tf_add_v2.toml"), &text).unwrap();
    Some(("contracts/tf_add_v2.toml".into(), text))
}

/// Bringing one's own kernels: a kernel source or include folder named from the contract's
/// folder, a C++ kernel name, a C++ reference function, and a kernel that replaces another.
fn own_kernel_rows() -> Vec<Row> {
    vec![
        contract(
            "a kernel source from the contract's folder leading outside",
            TF_CAST,
            "source = \"tf_cast.hip\"",
            b"source = \"../../outside/dir/k.hip\"",
            "kernel.source",
            "source = ",
            "/outside/dir/k.hip` resolves outside the repository and the folders given on the command line (to ",
        ),
        contract(
            "a kernel symbol that is no C++ name",
            TF_CAST,
            "symbol = \"tf_cast\"",
            b"symbol = \"tf_cast; int x\"",
            "kernel.symbol",
            "symbol = ",
            "`;` cannot stand in one",
        ),
        contract(
            "an include folder outside the repository",
            TF_CAST,
            "symbol = \"tf_cast\"",
            b"symbol = \"tf_cast\"\ninclude = [\"../../outside/dir\"]",
            "kernel.include[0]",
            "include = ",
            "/outside/dir` resolves outside the repository",
        ),
        contract(
            "an include folder that is a file",
            TF_CAST,
            "symbol = \"tf_cast\"",
            b"symbol = \"tf_cast\"\ninclude = [\"common.h\"]",
            "kernel.include[0]",
            "include = ",
            "`kernels/common.h` is not a folder",
        ),
        contract(
            "a C++ reference without its function",
            TF_CAST,
            "oracle = \"cast\"",
            b"reference = \"ref/cast.cpp\"",
            "reference.reference",
            "reference = ",
            "a C++ file and the function in it, `ref/x.cpp:function`",
        ),
        contract(
            "a C++ reference outside the repository",
            TF_CAST,
            "oracle = \"cast\"",
            b"reference = \"../../outside/secret.h:secret\"",
            "reference.reference",
            "reference = ",
            "/outside/secret.h` resolves outside the repository",
        ),
        contract(
            "an oracle and a replaced kernel both",
            TF_CAST,
            "oracle = \"cast\"",
            b"oracle = \"cast\"\nreplaces = \"tf_add\"",
            "reference.replaces",
            "replaces = ",
            "give one of `oracle`, `reference` and `replaces`",
        ),
        contract(
            "a replaced op of other tensors",
            TF_CAST,
            "oracle = \"cast\"",
            b"replaces = \"tf_add\"",
            "reference.replaces",
            "replaces = ",
            "`tf_add` has other tensors",
        ),
        contract(
            "a replaced op that does not exist",
            TF_CAST,
            "oracle = \"cast\"",
            b"replaces = \"tf_cats\"",
            "reference.replaces",
            "replaces = ",
            "no op `tf_cats`",
        ),
        contract(
            "a C++ reference with an absolute tolerance",
            "tf_silu_mul",
            "oracle = \"silu_mul\"",
            b"reference = \"./silu.cpp:silu_ref\"",
            "reference.tolerance",
            "tolerance = ",
            "a C++ reference runs only in a record's process",
        ),
        arranged(
            "a replacement held to a tolerance looser than its predecessor's bits",
            |f| replacing_tf_add(f, "replaces = \"tf_add\"\ntolerance = \"ulp(1)\""),
            Expect::LoadError {
                key: "reference.tolerance",
                at: "tolerance = ",
                words: "a kernel that replaces `tf_add` matches its bits, `exact`",
            },
        ),
        arranged(
            "a replacement whose shapes the replaced kernel's do not match",
            |f| {
                let (name, text) = replacing_tf_add(f, "replaces = \"tf_add\"")?;
                let out = "out = { role = \"output\", dtypes = [\"f32\", \"f16\", \"bf16\"], shape = \"rows, k\" }";
                let text = replaced(&text, out, out.replace("rows, k", "k, rows").as_bytes());
                std::fs::write(f.base.join(&name), &text).unwrap();
                Some((name, text))
            },
            Expect::LoadError {
                key: "reference.replaces",
                at: "replaces = ",
                words: "shapes.cases[0]: `out` is [3, 1] for `tf_add` but [1, 3] here",
            },
        ),
    ]
}

/// A contract whose cases, records or parameters leave a class of its op's domain open does
/// not load (`contract::domain`): one row per lint, and the exemptions that say why.
fn domain_rows() -> Vec<Row> {
    vec![
        contract(
            "domain: a width that is never 3 mod 4",
            TF_SUM_PARTIALS,
            "{ rows = 2, tiles = 7, d = 99 }",
            b"{ rows = 2, tiles = 7, d = 96 }",
            "shapes.cases",
            "cases = [",
            "`d` is ≡ 0, 1, 2 (mod 4) in the cases with two rows or more of `partials`, but its domain allows 3 too",
        ),
        contract(
            "domain: a width that is never an odd multiple of the block",
            TF_SUM_PARTIALS,
            "{ rows = 1, tiles = 768, d = 256 }",
            b"{ rows = 1, tiles = 768, d = 512 }",
            "shapes.cases",
            "cases = [",
            "no case gives the row width `d` an odd multiple of the block of 256 threads (256, 768, ...)",
        ),
        contract(
            "domain: a width never past 8192",
            // tf_sum_partials has a GPU-only case past it, which counts
            "tf_sum_partials_act",
            "{ rows = 1, tiles = 3, d = 8193 }",
            b"{ rows = 1, tiles = 3, d = 8192 }",
            "shapes.cases",
            "cases = [",
            "`d` has no bound in `requires` and no case past 8192 (the largest is 8192)",
        ),
        contract(
            "domain: a bound of requires no case meets",
            "tf_sum_partials_act",
            "{ rows = 2, tiles = 1024, d = 128 }",
            b"{ rows = 2, tiles = 1000, d = 128 }",
            "kernel.requires[0]",
            "requires = ",
            "`tiles <= 1024`: no case meets it at its bound (tiles = 1024)",
        ),
        contract(
            "domain: two symbols on one line in every case",
            "tf_copy_cols",
            "  { rows = 3, k = 37, width = 4 },\n  { rows = 33, k = 40, width = 8 },\n  { rows = 1025, k = 35, width = 3 },\n  { rows = 2, k = 768, width = 711 },",
            b"  { rows = 3, k = 36, width = 4 },\n  { rows = 33, k = 40, width = 8 },\n  { rows = 1025, k = 35, width = 3 },\n  { rows = 2, k = 768, width = 736 },",
            "shapes.cases",
            "cases = [",
            "`k` and `width` lie on one line in every case (width = k - 32)",
        ),
        contract(
            "domain: a pair of listed values no case takes",
            "tf_embed_rows",
            "  { n = 3, k = 256, vocab = 20, bits = 4, group = 128 },\n",
            b"",
            "shapes.cases",
            "cases = [",
            "no case gives (`bits`, `group`) the pairs (4, 128), which `requires` allows",
        ),
        contract(
            "domain: a parameter of one value in every record",
            "tf_rms",
            "params = { eps = 1e-6 }\n",
            b"",
            "params.eps",
            "eps = 1e-5",
            "parameter `eps` is 0.00001 in every record: a kernel that hardcodes that value instead of reading it passes",
        ),
        contract(
            "domain: a parameter of one value per dtype",
            "tf_copy_cols",
            "[[record]]\nname = \"f32, from column 7\"\ndtypes = { in = \"f32\", out = \"f32\" }\nparams = { start = 7 }\n\n[[record]]\nname = \"bf16, leading columns\"\ndtypes = { in = \"bf16\", out = \"bf16\" }\nparams = { start = 0 }\n\n[[record]]\nname = \"f16, trailing columns\"\ndtypes = { in = \"f16\", out = \"f16\" }\nparams = { start = 32 }\n\n[[record]]\nname = \"f32 to bf16, from column 7\"\ndtypes = { in = \"f32\", out = \"bf16\" }\nparams = { start = 7 }\n\n",
            b"",
            "record",
            "[[record]]",
            "parameter `start` takes one value per dtype of `in` (f32: 0, f16: 7, bf16: 32): a path of one dtype that ignores",
        ),
        contract(
            "domain: two tensors whose dtypes never differ",
            TF_ADD,
            "[[record]]\nname = \"bf16 a, f16 b, f32 out\"\ndtypes = { a = \"bf16\", b = \"f16\", out = \"f32\" }\n",
            b"",
            "record",
            "[[record]]",
            "no record gives `a` and `b` different dtypes: a kernel that decodes one with the other's dtype code passes every record",
        ),
        contract(
            "domain: an exemption that exempts nothing",
            TF_ADD,
            "[inputs]",
            b"[exempt]\ndtype_pairs = { \"a, b\" = \"a mixed record would cost too much\" }\n\n[inputs]",
            "exempt.dtype_pairs.a, b",
            "dtype_pairs = ",
            "exempts nothing: the contract covers what `dtype_pairs` asks of `a, b`; remove the exemption",
        ),
        contract(
            "domain: an exemption of no lint",
            TF_ADD,
            "[inputs]",
            b"[exempt]\nresidue = { k = \"widths of 4\" }\n\n[inputs]",
            "exempt.residue",
            "residue = ",
            "no lint `residue` (the lints: residues, odd_multiple, bound, past, affine, pairs, param_values, param_dtype, dtype_pairs)",
        ),
    ]
}

/// How many records tf_add's contract has.
fn tf_add_records(f: &Fixture) -> usize {
    String::from_utf8_lossy(&f.real("contracts/tf_add.toml")).matches("[[record]]").count()
}

/// `find` replaced by `replace` in `text`, refusing a replacement that does not apply.
fn replaced(text: &[u8], find: &str, replace: &[u8]) -> Vec<u8> {
    if find.is_empty() {
        return replace.to_vec();
    }
    let at = text.windows(find.len()).position(|w| w == find.as_bytes()).unwrap_or_else(|| panic!("`{find}` is not in the file"));
    [&text[..at], replace, &text[at + find.len()..]].concat()
}

/// The 1-based line where `at` first appears in `text`.
fn line_of(text: &[u8], at: &str) -> usize {
    if at.is_empty() {
        return 1;
    }
    let offset = text.windows(at.len()).position(|w| w == at.as_bytes()).unwrap_or_else(|| panic!("`{at}` is not in the broken file"));
    text[..offset].iter().filter(|b| **b == b'\n').count() + 1
}

/// A row's two folders: the repository it runs on, and a folder beside it that nothing the run
/// does may change.
struct Fixture {
    base: PathBuf,
    outside: PathBuf,
}

impl Fixture {
    /// A file of the real repository.
    fn real(&self, path: &str) -> Vec<u8> {
        std::fs::read(root().join(path)).unwrap()
    }

    /// A file of the real repository, copied to the same place in this one.
    fn copy(&self, path: &str) {
        std::fs::write(self.base.join(path), self.real(path)).unwrap()
    }

    fn report(&self) -> PathBuf {
        self.base.join("r.json")
    }
}

/// Every entry under `dir`, each with its kind and its bytes or link target: two listings are
/// equal only when nothing under it changed.
fn listing(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let (kind, bytes) = if meta.file_type().is_symlink() {
                ("link", std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes())
            } else if meta.is_dir() {
                folders.push(path.clone());
                ("folder", Vec::new())
            } else if meta.is_file() {
                ("file", std::fs::read(&path).unwrap())
            } else {
                ("other", Vec::new())
            };
            found.push((name, kind.to_string(), bytes));
        }
    }
    found.sort();
    found
}

/// What stands at a path, as a word (`nothing` when nothing does).
fn kind_at(path: &Path) -> String {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Err(_) => "nothing".into(),
        Ok(m) if m.file_type().is_symlink() => format!("link to {}", std::fs::read_link(path).unwrap().display()),
        Ok(m) if m.is_dir() => "folder".into(),
        Ok(m) if m.is_file() => "file".into(),
        Ok(m) if m.file_type().is_char_device() => "character device".into(),
        Ok(m) if m.file_type().is_fifo() => "named pipe".into(),
        Ok(_) => "other".into(),
    }
}

/// What one row wrote and how to run it.
struct Setup {
    /// Held for the row's run: dropping it removes both folders.
    _dir: tempfile::TempDir,
    fixture: Fixture,
    /// As messages show it, relative to the repository.
    broken: String,
    broken_text: Vec<u8>,
    args: Vec<String>,
    /// Where the binary runs (the repository, but for a row without `--root`).
    cwd: PathBuf,
}

/// A repository of its own (so paths in messages read `contracts/x.toml`, and kernel builds
/// hit the cache: the key holds the kernel's path as shown): the good tf_add contract, the
/// real kernels, and the row's broken file; beside it, the folder no run may change.
fn set_up(row: &Row) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let f = Fixture { base: top.join("repo"), outside: top.join("outside") };
    for folder in ["contracts", "controls"] {
        std::fs::create_dir_all(f.base.join(folder)).unwrap();
    }
    for (name, bytes) in OUTSIDE {
        let path = f.outside.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    copy_dir(&root().join("kernels"), &f.base.join("kernels"));
    if !row.alone {
        f.copy("contracts/tf_add.toml");
    }
    let mut args = vec!["--root".to_string(), f.base.to_str().unwrap().to_string()];
    let mut cwd = root();
    let (broken, broken_text) = match &row.breaks {
        Break::Contract { stem, find, replace } => {
            args.push("--no-controls".into());
            (format!("contracts/{stem}_broken.toml"), replaced(&f.real(&format!("contracts/{stem}.toml")), find, replace))
        }
        Break::Control { find, replace, arrange } => {
            // the good control beside it must still go red
            f.copy("controls/add_whole_blocks_only.toml");
            f.copy("controls/add_whole_blocks_only.hip");
            arrange(&f);
            let text = replaced(&f.real("controls/add_whole_blocks_only.toml"), find, replace.as_bytes());
            ("controls/add_whole_blocks_only_broken.toml".to_string(), text)
        }
        Break::Kernel { find, replace } => {
            args.push("--no-controls".into());
            f.copy("contracts/tf_softmax_stats.toml");
            ("kernels/tf_softmax_stats.hip".to_string(), replaced(&f.real("kernels/tf_softmax_stats.hip"), find, replace.as_bytes()))
        }
        Break::Arranged { arrange } => {
            args.push("--no-controls".into());
            arrange(&f).unwrap_or_default()
        }
        Break::EditedHeader { first, .. } => {
            args.push("--no-controls".into());
            f.copy("contracts/tf_softmax_stats.toml");
            let kernel = replaced(
                &f.real("kernels/tf_softmax_stats.hip"),
                "#include \"common.h\"",
                b"#include \"common.h\"\n#include \"stats/start.h\"",
            );
            std::fs::write(f.base.join("kernels/tf_softmax_stats.hip"), replaced(&kernel, "float sum = 0.0f;", b"float sum = SUM_START;"))
                .unwrap();
            std::fs::create_dir_all(f.base.join("kernels/stats")).unwrap();
            // the checked run's text is written after the first run
            std::fs::write(f.base.join("kernels/stats/start.h"), first).unwrap();
            ("kernels/stats/start.h".to_string(), first.as_bytes().to_vec())
        }
        Break::DamagedCache { .. } | Break::UnusableCache { .. } => {
            args.push("--no-controls".into());
            f.copy("contracts/tf_softmax_stats.toml");
            args.extend(["--cache-dir".to_string(), f.base.join("cache").to_str().unwrap().to_string()]);
            if let Break::UnusableCache { make } = &row.breaks {
                make(&f.base.join("cache"));
            }
            ("cache".to_string(), Vec::new())
        }
        Break::Flags { args: given, root } => {
            if !root {
                args.clear();
                cwd = f.outside.clone();
            }
            args.extend(given.iter().map(|a| a.to_string()));
            (String::new(), Vec::new())
        }
    };
    if matches!(row.breaks, Break::Contract { .. } | Break::Control { .. } | Break::Kernel { .. }) {
        std::fs::write(f.base.join(&broken), &broken_text).unwrap();
    }
    args.extend(["--report".to_string(), f.report().to_str().unwrap().to_string()]);
    Setup { _dir: dir, fixture: f, broken, broken_text, args, cwd }
}

/// What a row does before the run it checks: a first run (which must pass) where the row
/// breaks something between two runs. Gives back the damaged cache files with their bytes
/// before, and what went wrong.
fn first_run(row: &Row, setup: &Setup) -> (Vec<Damaged>, Option<String>) {
    if !matches!(row.breaks, Break::EditedHeader { .. } | Break::DamagedCache { .. }) {
        return (Vec::new(), None);
    }
    let base = &setup.fixture.base;
    let args: Vec<&str> = setup.args.iter().map(String::as_str).collect();
    let mut command = contracts_command(&args);
    command.current_dir(&setup.cwd);
    let (code, lines, stderr) = output_of(command);
    if code != 0 {
        return (Vec::new(), Some(format!("the first run exited {code}:\n{}\n{stderr}", lines.join("\n"))));
    }
    match &row.breaks {
        Break::EditedHeader { second, .. } => {
            std::fs::write(base.join(&setup.broken), second).unwrap();
            (Vec::new(), None)
        }
        Break::DamagedCache { damage } => (damage(&base.join("cache")), None),
        _ => (Vec::new(), None),
    }
}

/// The exit status a row's run must end with.
fn want_code(row: &Row) -> i32 {
    match row.expect {
        Expect::LoadError { .. } | Expect::RecordError { .. } if row.alone => 2,
        Expect::LoadError { .. } | Expect::RecordError { .. } => 1,
        Expect::NotRun { .. } | Expect::Written => 0,
        Expect::ReportRefused { .. } | Expect::Refused { .. } => 2,
        Expect::RecordFail { .. } => 1,
        Expect::Pass => 0,
        Expect::Fatal { .. } => 2,
    }
}

/// Runs one row: what the run said about the broken input, and every way the row falls
/// short (none when it holds).
fn check(row: &Row) -> (String, Vec<String>) {
    let setup = set_up(row);
    let f = &setup.fixture;
    let outside_before = listing(&f.outside);
    let (damaged, first_problem) = first_run(row, &setup);
    if let Some(problem) = first_problem {
        return (String::new(), vec![problem]);
    }
    let report_before = kind_at(&f.report());
    let args: Vec<&str> = setup.args.iter().map(String::as_str).collect();
    // the fixture's folder is unique to this row's run: so is the marker
    let marker = format!("bad input: {}", f.base.display());
    let (code, lines, stderr) = run_checked(&setup.cwd, &args, &marker);
    let mut problems = Vec::new();
    let mut expect = |holds: bool, what: String| {
        if !holds {
            problems.push(what)
        }
    };
    let file = &setup.broken;
    let printed = |start: &str| lines.iter().position(|l| l.starts_with(start));
    let mut said = String::new();

    match &row.expect {
        Expect::LoadError { key, at, words } => {
            let line = line_of(&setup.broken_text, at);
            let head = format!("{file}:{line}: error: `{key}`: ");
            match printed(&head) {
                Some(i) => {
                    said = lines[i].clone();
                    expect(lines[i].contains(words), format!("the error does not say `{words}`: {}", lines[i]))
                }
                None => expect(false, format!("no line `{head}...`")),
            }
        }
        Expect::RecordError { record, words, log } => {
            let head = format!("tf_softmax_stats ({record}) ERROR: ");
            match printed(&head) {
                Some(i) => {
                    said = lines[i].clone();
                    for w in *words {
                        expect(lines[i].contains(w), format!("the ERROR line does not say `{w}`: {}", lines[i]));
                    }
                    let under: Vec<&String> = lines[i + 1..].iter().take_while(|l| l.starts_with("    ")).collect();
                    if !log.is_empty() {
                        let logged = under.iter().find(|l| log.iter().all(|w| l.contains(w)));
                        expect(logged.is_some(), format!("no compiler log line with {log:?} under the ERROR line"));
                        if let Some(logged) = logged {
                            said = format!("{said} / under it: {}", logged.trim());
                        }
                    }
                }
                None => expect(false, format!("no line `{head}...`")),
            }
        }
        Expect::NotRun { file, words } => {
            let head = format!("    {file} ");
            let listed = printed(&head).filter(|i| lines[..*i].iter().any(|l| l.contains(" not run on host-")));
            match listed {
                Some(i) => {
                    said = lines[i].trim().to_string();
                    expect(lines[i].contains(words), format!("the not-run line does not say `{words}`: {}", lines[i]))
                }
                None => expect(false, format!("no line `{head}...` under `... not run on host-...:`")),
            }
        }
        Expect::ReportRefused { words } => {
            let refused = "; report NOT written to r.json: it is ";
            match lines.iter().find(|l| l.starts_with("ran ")) {
                Some(l) => {
                    said = l[l.find("; report").unwrap_or(0)..].to_string();
                    let holds = l.find(refused).is_some_and(|at| l[at..].contains(words));
                    expect(holds, format!("the `ran ...` line does not end `{refused}...{words}`: {l}"))
                }
                None => expect(false, "no `ran ...` line".into()),
            }
            let after = kind_at(&f.report());
            expect(after == report_before, format!("what stood at the report's path was {report_before}, now {after}"));
        }
        Expect::Written => said = "report written whole".into(),
        Expect::Refused { words } => {
            said = stderr.trim().to_string();
            expect(stderr.contains(words), format!("standard error does not say `{words}`"));
            expect(lines.iter().all(|l| !l.starts_with("SUMMARY ")), "a SUMMARY printed though nothing ran".into());
            expect(kind_at(&f.report()) == "nothing", "a report was written though nothing ran".into());
        }
        Expect::RecordFail { record, words } => {
            let head = format!("tf_softmax_stats ({record}) FAIL at ");
            match printed(&head) {
                Some(i) => {
                    said = lines[i].clone();
                    for w in *words {
                        expect(lines[i].contains(w), format!("the FAIL line does not say `{w}`: {}", lines[i]));
                    }
                }
                None => expect(false, format!("no line `{head}...`")),
            }
        }
        Expect::Pass => {
            match printed("tf_softmax_stats (f32 scores) pass ") {
                Some(i) => said = lines[i].clone(),
                None => expect(false, "no line `tf_softmax_stats (f32 scores) pass ...`".into()),
            }
            for (path, before) in &damaged {
                let now = std::fs::read(path).unwrap_or_default();
                expect(&now == before, format!("{} was not rebuilt as it was before the damage", path.display()));
            }
        }
        Expect::Fatal { words } => {
            let head = format!("contracts: error: kernel cache folder {}: ", f.base.join("cache").display());
            match stderr.lines().find(|l| l.starts_with(&head)) {
                Some(line) => {
                    said = line.to_string();
                    expect(line.contains(words), format!("the error does not say `{words}`: {line}"));
                }
                None => expect(false, format!("no line `{head}...` on standard error")),
            }
            expect(lines.is_empty(), "a run that cannot start prints nothing on standard output".into());
            expect(kind_at(&f.report()) == "nothing", "a report was written though nothing ran".into());
        }
    }

    let want_code = want_code(row);
    expect(code == want_code, format!("exit {code}, not {want_code}"));
    let left = crate::processes_marked(&marker);
    expect(left.is_empty(), format!("processes of the run are left: {left:?}"));
    expect(listing(&f.outside) == outside_before, "the folder beside the repository changed".into());
    let leftovers: Vec<String> = std::fs::read_dir(&f.base)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".r.json."))
        .collect();
    expect(leftovers.is_empty(), format!("temporary files left beside the report: {leftovers:?}"));
    if matches!(row.expect, Expect::Refused { .. } | Expect::Fatal { .. }) {
        return finish(said, problems, &lines, &stderr);
    }

    let summary = lines.last().filter(|l| l.starts_with("SUMMARY ")).cloned();
    expect(summary.is_some(), "the last line is not the SUMMARY".into());
    if !row.alone {
        expect(printed("tf_add (f32) pass ").is_some(), "the good contract's record line `tf_add (f32) pass ...` is missing".into());
        if matches!(row.breaks, Break::Control { .. }) {
            expect(
                printed("tf_add (assumes a whole number of blocks").is_some_and(|i| lines[i].contains(" red at repeat as planted")),
                "the good control did not go red as planted".into(),
            );
        }
    }
    if matches!(row.expect, Expect::ReportRefused { .. }) {
        return finish(said, problems, &lines, &stderr);
    }

    let report = f.report();
    match std::fs::read_to_string(&report)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Err(e) => expect(false, format!("report {}: {e}", report.display())),
        Ok(json) => {
            expect(json["exit_code"] == want_code, format!("the report's exit_code is {}", json["exit_code"]));
            expect(summary.is_some_and(|s| json["summary_line"] == s.as_str()), "the report's summary_line is not the SUMMARY".into());
            let in_report = match &row.expect {
                Expect::LoadError { key, at, .. } => json["contract_errors"].as_array().is_some_and(|errors| {
                    errors
                        .iter()
                        .any(|e| e["file"] == file.as_str() && e["key"] == *key && e["line"] == line_of(&setup.broken_text, at) as u64)
                }),
                Expect::RecordError { record, words, .. } => json["records"].as_array().is_some_and(|records| {
                    records
                        .iter()
                        .any(|r| r["record"] == *record && r["error"].as_str().is_some_and(|e| words.iter().all(|w| e.contains(w))))
                }),
                Expect::NotRun { file, words } => json["controls_not_applicable"]
                    .as_array()
                    .is_some_and(|listed| listed.iter().any(|c| c.as_str().is_some_and(|c| c.starts_with(file) && c.contains(words)))),
                // tf_add's records, each reported
                Expect::Written => json["records"].as_array().is_some_and(|r| r.len() == tf_add_records(f)),
                Expect::RecordFail { record, .. } => json["records"]
                    .as_array()
                    .is_some_and(|records| records.iter().any(|r| r["record"] == *record && r["outcome"] == "fail")),
                Expect::Pass => json["records"].as_array().is_some_and(|records| records.iter().all(|r| r["outcome"] == "pass")),
                Expect::ReportRefused { .. } | Expect::Refused { .. } | Expect::Fatal { .. } => true,
            };
            expect(in_report, "the outcome is not in the JSON report".into());
        }
    }
    finish(said, problems, &lines, &stderr)
}

fn finish(said: String, mut problems: Vec<String>, lines: &[String], stderr: &str) -> (String, Vec<String>) {
    if !problems.is_empty() {
        problems.push(format!("output:\n{}\n{stderr}", lines.join("\n")));
    }
    (said, problems)
}

#[test]
fn every_bad_input_is_named_by_file_line_and_key_and_the_rest_still_runs() {
    // BAD_INPUT_ROWS=words runs only the rows whose name holds them (while working on a few)
    let only = std::env::var("BAD_INPUT_ROWS").ok();
    let rows: Vec<Row> = rows().into_iter().filter(|r| only.as_deref().is_none_or(|w| r.name.contains(w))).collect();
    assert!(only.is_some() || rows.len() >= 20 + 12);
    let failures = crate::rows_two_at_a_time(&rows, |row| row.name, check);
    assert!(failures.is_empty(), "{} of {} rows fall short:\n{}", failures.len(), rows.len(), failures.join("\n\n"));
}
