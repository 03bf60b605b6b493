//! The bad-input table (issue 6): each row breaks a copy of the repository the way a user
//! would, runs the real binary on it, and checks that the message names the file, the line
//! and the key, that the good contract beside it still ran, and the exit status and report.

use std::path::{Path, PathBuf};

use crate::{contracts_command, copy_dir, output_of, root};

/// How a row breaks its copy of the repository. Texts are replaced in a copy of a real
/// file, so a row keeps meaning what it says when the real file changes (a replacement
/// that no longer applies fails the row).
enum Break {
    /// `contracts/<stem>_broken.toml`: `contracts/<stem>.toml` with `find` replaced. The name
    /// sorts after the original's, so a second contract for one op is the one refused.
    Contract { stem: &'static str, find: &'static str, replace: &'static [u8] },
    /// `controls/add_whole_blocks_only_broken.toml`: that control with `find` replaced.
    Control { find: &'static str, replace: &'static str },
    /// `kernels/tf_softmax_stats.hip` with `find` replaced, its contract beside tf_add's.
    Kernel { find: &'static str, replace: &'static str },
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

enum Expect {
    /// `<file>:<line>: error: `<key>`: <message>`, the line being where `at` is in the broken
    /// file, and the message containing `words`.
    LoadError { key: &'static str, at: &'static str, words: &'static str },
    /// `<op> (<record>) ERROR: ...` containing `words`, and under it, indented, a line of the
    /// compiler's log containing all of `log`.
    RecordError { record: &'static str, words: &'static [&'static str], log: &'static [&'static str] },
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

const fn control(
    name: &'static str,
    find: &'static str,
    replace: &'static str,
    key: &'static str,
    at: &'static str,
    words: &'static str,
) -> Row {
    Row { name, breaks: Break::Control { find, replace }, expect: Expect::LoadError { key, at, words }, alone: false }
}

const TF_ADD: &str = "tf_add";

/// tf_add's policy for non-finite inputs and its reason, as its contract states them.
const NONFINITE_POLICY: &str = "policy = \"propagate\"\nreason = \"\"\"one f32 add, IEEE arithmetic as in the oracle: a NaN gives NaN, \
                                inf + -inf gives NaN, an infinity plus a finite value that infinity\"\"\"";

fn rows() -> Vec<Row> {
    vec![
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
        contract("missing required key", TF_ADD, "oracle = \"add\"\n", b"", "oracle", "[reference]", "missing field `oracle`"),
        contract("unknown op", TF_ADD, "op = \"tf_add\"", b"op = \"tf_addd\"", "op", "op = ", "unknown op `tf_addd`"),
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
            "b = \"normal(0, 1) | near_max_row(last)\"",
            b"b = \"normal(0, 1)\"\nout = \"normal(0, 1)\"",
            "inputs.out",
            "out = \"normal",
            "an output of tf_add",
        ),
        contract(
            "no generator for an input",
            TF_ADD,
            "b = \"normal(0, 1) | near_max_row(last)\"\n",
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
            b"[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\ntensor = \"out\"\nmatches = \"differ\"\ncases = [0, 5]\nreason = \"r\"\n\n[reference]",
            "finding[0].cases",
            "cases = [0, 5]",
            "case 5 is out of range: [shapes].cases has 5 (0 to 4)",
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
        Row {
            alone: true,
            ..contract("the only contract broken", TF_ADD, "op = \"tf_add\"", b"op = \"tf_addd\"", "op", "op = ", "unknown op")
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
fn run_checked(args: &[&str]) -> (i32, Vec<String>, String) {
    use std::os::unix::process::CommandExt;
    let mut command = contracts_command(args);
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

/// What one row wrote and how to run it.
struct Setup {
    dir: tempfile::TempDir,
    /// As messages show it, relative to the repository.
    broken: String,
    broken_text: Vec<u8>,
    args: Vec<String>,
}

/// A repository of its own (so paths in messages read `contracts/x.toml`, and kernel builds
/// hit the cache: the key holds the kernel's path as shown): the good tf_add contract, the
/// real kernels, and the row's broken file.
fn set_up(row: &Row) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for folder in ["contracts", "controls"] {
        std::fs::create_dir_all(base.join(folder)).unwrap();
    }
    copy_dir(&root().join("kernels"), &base.join("kernels"));
    let real = |path: &str| std::fs::read(root().join(path)).unwrap();
    let copy = |path: &str| std::fs::write(base.join(path), real(path)).unwrap();
    if !row.alone {
        copy("contracts/tf_add.toml");
    }
    let mut args = vec!["--root".to_string(), base.to_str().unwrap().to_string()];
    let (broken, broken_text) = match &row.breaks {
        Break::Contract { stem, find, replace } => {
            args.push("--no-controls".into());
            (format!("contracts/{stem}_broken.toml"), replaced(&real(&format!("contracts/{stem}.toml")), find, replace))
        }
        Break::Control { find, replace } => {
            // the good control beside it must still go red
            copy("controls/add_whole_blocks_only.toml");
            copy("controls/add_whole_blocks_only.hip");
            let text = replaced(&real("controls/add_whole_blocks_only.toml"), find, replace.as_bytes());
            ("controls/add_whole_blocks_only_broken.toml".to_string(), text)
        }
        Break::Kernel { find, replace } => {
            args.push("--no-controls".into());
            copy("contracts/tf_softmax_stats.toml");
            ("kernels/tf_softmax_stats.hip".to_string(), replaced(&real("kernels/tf_softmax_stats.hip"), find, replace.as_bytes()))
        }
        Break::EditedHeader { first, .. } => {
            args.push("--no-controls".into());
            copy("contracts/tf_softmax_stats.toml");
            let kernel = replaced(
                &real("kernels/tf_softmax_stats.hip"),
                "#include \"common.h\"",
                b"#include \"common.h\"\n#include \"stats/start.h\"",
            );
            std::fs::write(base.join("kernels/tf_softmax_stats.hip"), replaced(&kernel, "float sum = 0.0f;", b"float sum = SUM_START;"))
                .unwrap();
            std::fs::create_dir_all(base.join("kernels/stats")).unwrap();
            // the checked run's text is written after the first run
            ("kernels/stats/start.h".to_string(), first.as_bytes().to_vec())
        }
        Break::DamagedCache { .. } | Break::UnusableCache { .. } => {
            args.push("--no-controls".into());
            copy("contracts/tf_softmax_stats.toml");
            args.extend(["--cache-dir".to_string(), base.join("cache").to_str().unwrap().to_string()]);
            ("cache".to_string(), Vec::new())
        }
    };
    match &row.breaks {
        Break::UnusableCache { make } => make(&base.join("cache")),
        Break::DamagedCache { .. } => {}
        _ => std::fs::write(base.join(&broken), &broken_text).unwrap(),
    }
    args.extend(["--report".to_string(), base.join("r.json").to_str().unwrap().to_string()]);
    Setup { dir, broken, broken_text, args }
}

/// What a row does before the run it checks: a first run (which must pass) where the row
/// breaks something between two runs. Gives back the damaged cache files with their bytes
/// before, and what went wrong.
fn first_run(row: &Row, setup: &Setup) -> (Vec<Damaged>, Option<String>) {
    let base = setup.dir.path().canonicalize().unwrap();
    if !matches!(row.breaks, Break::EditedHeader { .. } | Break::DamagedCache { .. }) {
        return (Vec::new(), None);
    }
    let args: Vec<&str> = setup.args.iter().map(String::as_str).collect();
    let (code, lines, stderr) = output_of(contracts_command(&args));
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

/// Runs one row: what the run said about the broken file, and every way the row falls
/// short (none when it holds).
fn check(row: &Row) -> (String, Vec<String>) {
    let setup = set_up(row);
    let (damaged, first_problem) = first_run(row, &setup);
    if let Some(problem) = first_problem {
        return (String::new(), vec![problem]);
    }
    let args: Vec<&str> = setup.args.iter().map(String::as_str).collect();
    let (code, lines, stderr) = run_checked(&args);
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
            let cache = setup.dir.path().canonicalize().unwrap().join("cache");
            let head = format!("contracts: error: kernel cache folder {}: ", cache.display());
            match stderr.lines().find(|l| l.starts_with(&head)) {
                Some(line) => {
                    said = line.to_string();
                    expect(line.contains(words), format!("the error does not say `{words}`: {line}"));
                }
                None => expect(false, format!("no line `{head}...` on standard error: {stderr}")),
            }
            expect(code == 2, format!("exit {code}, not 2"));
            expect(lines.is_empty(), "a run that cannot start prints nothing on standard output".into());
            expect(!setup.dir.path().join("r.json").exists(), "a run that cannot start writes no report".into());
            if !problems.is_empty() {
                problems.push(format!("output:\n{}\n{stderr}", lines.join("\n")));
            }
            return (said, problems);
        }
    }

    let want_code = match row.expect {
        Expect::Pass => 0,
        _ if row.alone => 2,
        _ => 1,
    };
    expect(code == want_code, format!("exit {code}, not {want_code}"));
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

    let report = setup.dir.path().join("r.json");
    match std::fs::read_to_string(&report)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Err(e) => expect(false, format!("report {}: {e}", report.display())),
        Ok(json) => {
            expect(json["exit_code"] == want_code, format!("the report's exit_code is {}", json["exit_code"]));
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
                Expect::RecordFail { record, .. } => json["records"]
                    .as_array()
                    .is_some_and(|records| records.iter().any(|r| r["record"] == *record && r["outcome"] == "fail")),
                Expect::Pass => json["records"].as_array().is_some_and(|records| records.iter().all(|r| r["outcome"] == "pass")),
                Expect::Fatal { .. } => unreachable!("a run that cannot start writes no report"),
            };
            expect(in_report, "the error is not in the JSON report".into());
        }
    }
    if !problems.is_empty() {
        problems.push(format!("output:\n{}\n{stderr}", lines.join("\n")));
    }
    (said, problems)
}

#[test]
fn every_bad_input_is_named_by_file_line_and_key_and_the_rest_still_runs() {
    let rows = rows();
    assert!(rows.len() >= 20);
    // two runs at a time: each is mostly process start, loading and one small contract
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<_> = rows.chunks(rows.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|row| {
                            let (said, problems) = check(row);
                            // the table as the run answered it, for `--nocapture`
                            println!("{} -> {said}", row.name);
                            (!problems.is_empty()).then(|| format!("{}:\n  {}", row.name, problems.join("\n  ")))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} of {} rows fall short:\n{}", failures.len(), rows.len(), failures.join("\n\n"));
}
