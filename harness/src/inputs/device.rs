//! Large inputs drawn on a GPU by a kernel of the harness (`draw.hip`) instead of on the
//! host's cores: a GPU-only case's 2 to 2.2 G normals took 5 to 10 s of a 16-core host, the
//! device makes them in milliseconds. The bytes come back to the host as the input's host copy
//! (the oracle's and gate 3's), and each tensor drawn so is compared with the host's own
//! generator at about 140,000 elements (both ends, an even spread, seeded places) before it is
//! used: a device that draws otherwise is an error of the record, never other inputs. An
//! input is drawn into its own tensor (`InputSpec::draw_into`), and once the host's modifiers
//! have changed their few elements a row, only the words they wrote go up again where they are
//! few (`seal_drawn`, `kc_patch`, `PAIRED_ONE_WORD_IN`), where sending an 8 GiB table whole
//! again took 0.3 to 1.5 s a record on an H100.
//!
//! Gate 3's check that such an input is unchanged after a record's launches is a keyed hash of
//! its bytes on the device (`kc_hash`), where the bytes were read back whole (0.6 to 2.7 s for
//! 8 GiB a record, every record of a GPU-only case). The tensor is sealed as it goes up: a key
//! drawn then, the device's hash with it proven equal to the host copy's (so the upload itself
//! is checked), and each later check hashes on the device alone against the seal, where a host
//! pass over the copy cost 0.1 to 0.25 s a record. The key is never given to a kernel under
//! test, so no change it makes can aim at it. A hash that differs reads the input back for the
//! failure's elements. What it does not stop: a kernel under test that reads the key from the
//! process's memory, or rewrites the harness's own kernel's code in device memory (the README's
//! security model: the isolation stops accidents, not a kernel that sets out to escape).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use engine::DType;
use engine::backend::{Backend, KernelArg, KernelSource, LaunchDims, Module, Schedule};
use engine::shape_expr::Symbols;

use super::{Generator, SeededStream, Written};

/// A generator's tensor of this many bytes or more is drawn on the device.
pub const DRAWN_ON_DEVICE_BYTES: usize = 64 << 20;

/// An input of this many bytes or more is checked by its hash on the device (`holds`).
pub const HASHED_ON_DEVICE_BYTES: usize = 64 << 20;

/// An output of this many bytes or more has its later launches held to its first on the device,
/// by the keyed hash (`repeat_check`), where each was read back whole (a hash takes a launch,
/// 2 MiB of partial sums back and a host pass over the first launch's bytes on all cores). On an
/// H100, in one process, tf_embed_dense's six records (a case of 16.8 M elements, three launches
/// each) read back in 0.012-0.061 s a record so, against 0.018-0.081 s each launch read whole.
pub const REPEAT_HASHED_BYTES: usize = 16 << 20;

/// Blocks of a hash's launch: about as many threads as an H100 keeps resident, and a sum of
/// each thread's to read back (2 MiB).
const HASH_BLOCKS: u64 = 1024;

/// The kernel's source, built by the backend's own compiler like any kernel's.
const SOURCE: &str = include_str!("draw.hip");
const KERNEL: &str = "kc_draw";
const HASH_KERNEL: &str = "kc_hash";
const PATCH_KERNEL: &str = "kc_patch";
const BLOCK_THREADS: u32 = 256;
/// Blocks of a launch; each thread steps through the tensor by the grid's threads.
const MOST_BLOCKS: u64 = 16_384;

/// A run of written words this long or longer goes up as a copy of its own (a row a modifier
/// rewrote); shorter ones (the special values' few elements a row) as (word, value) pairs.
const COPIED_RUN_BYTES: usize = 1 << 20;

/// A drawn tensor's written words go up as pairs where they are at most one in this many of
/// its words (runs long enough for a copy of their own aside), else the tensor goes up whole.
/// A pair is 16 bytes against a word's 8 sent whole, and the pairs are made on all cores
/// (`ShortWords::pairs`: 32 M of them, a few words of every row of 64 of a 4 GiB cache, in 0.28 to
/// 0.30 s on 2 cores, to 512 MiB against the cache's 4 GiB whole); one in 8 leaves their making
/// and the device's scatter a margin. On an H100's host, in one process, a 4 GiB input with one
/// word in 64 written went up as pairs in 0.20-0.22 s against 0.26-0.27 s whole, and one with one
/// in 16 in 0.22-0.26 s either way (the seal's host hash beside the send as long). When one
/// thread made them, 32 M pairs took 1.34 to 1.50 s a record against 0.84 to 0.91 s whole, and
/// the rule was one in 256.
const PAIRED_ONE_WORD_IN: usize = 8;

/// Elements compared at each end, spread evenly, and at seeded places.
const ENDS_CHECKED: usize = 4096;
const SPREAD_CHECKED: usize = 65_536;
const SEEDED_CHECKED: usize = 65_536;

/// What a large input's tensor held when it went up, for gate 3's later checks: a key drawn
/// then (never given to a kernel under test) and the device's keyed hash of the tensor with
/// it, which was the host copy's.
#[derive(Clone, Copy, Debug)]
pub struct Seal {
    key: u64,
    hash: u64,
}

/// A launch's output held to the bytes of the case's first launch (gate 2), by the keyed hash:
/// a key drawn when the first launch's bytes came back (never given to a kernel under test), the
/// host's hash of those bytes' whole words with it, and the bytes past the last whole word.
#[derive(Debug)]
pub struct RepeatCheck {
    key: u64,
    on_host: u64,
    words: usize,
    tail: Vec<u8>,
}

/// A large input drawn into its own tensor (`InputSpec::draw_into`): the tensor as drawn, the
/// host's bytes as the modifiers left them, and the words they wrote, which `seal_drawn` sends.
pub struct Drawn {
    pub tensor: engine::tensor::Tensor,
    pub bytes: Vec<u8>,
    pub written: Written,
}

/// The device's drawing of inputs, for one backend and its build cache.
pub struct DeviceDraw<'a> {
    backend: &'a dyn Backend,
    cache_dir: &'a Path,
}

impl<'a> DeviceDraw<'a> {
    /// The drawing on `backend`'s device where it is a GPU's (`cuda`, `hip`); none on the
    /// host backend, whose device is the host's cores.
    pub fn on(backend: &'a dyn Backend, cache_dir: &'a Path) -> Option<DeviceDraw<'a>> {
        matches!(backend.name(), "cuda" | "hip").then_some(DeviceDraw { backend, cache_dir })
    }

    /// The same on any backend (the host's included): tests run the kernel on the host backend.
    #[cfg(test)]
    pub(crate) fn anywhere(backend: &'a dyn Backend, cache_dir: &'a Path) -> DeviceDraw<'a> {
        DeviceDraw { backend, cache_dir }
    }

    /// Whether `generate` would draw `elements` of `dtype` from `generator` here.
    pub fn takes(generator: &Generator, dtype: DType, elements: usize) -> bool {
        let drawable = match generator {
            Generator::Normal { mean, std } => mean.is_finite() && std.is_finite(),
            Generator::Uniform { low, high } => (high - low).is_finite(),
            Generator::Int { .. } => true,
            Generator::Constant(_) => false,
        };
        drawable && elements.saturating_mul(dtype.size()) >= DRAWN_ON_DEVICE_BYTES
    }

    /// `generator.generate(dtype, elements, seed, symbols)`'s bytes, drawn on the device and
    /// checked against the host's generator at sampled elements; `None` where it does not
    /// draw them (`takes`).
    pub fn generate(
        &self,
        generator: &Generator,
        dtype: DType,
        elements: usize,
        seed: u64,
        symbols: &Symbols,
    ) -> Option<Result<Vec<u8>, String>> {
        Self::takes(generator, dtype, elements).then(|| self.draw_checked(generator, dtype, elements, seed, symbols))
    }

    fn draw_checked(&self, generator: &Generator, dtype: DType, elements: usize, seed: u64, symbols: &Symbols) -> Result<Vec<u8>, String> {
        self.draw_tensor(generator, dtype, &[elements], seed, symbols).map(|(_, bytes)| bytes)
    }

    /// A tensor of `shape` drawn on the device, and its bytes read back, checked against the
    /// host's generator at sampled elements.
    pub(super) fn draw_tensor(
        &self,
        generator: &Generator,
        dtype: DType,
        shape: &[usize],
        seed: u64,
        symbols: &Symbols,
    ) -> Result<(engine::tensor::Tensor, Vec<u8>), String> {
        let bounds = generator.int_bounds(symbols)?;
        let (tensor, bytes) = self.draw(generator, dtype, shape, seed, bounds).map_err(|e| format!("drawn on the device: {e}"))?;
        match first_difference(generator, dtype, &bytes, seed, bounds) {
            None => Ok((tensor, bytes)),
            Some((element, device, host)) => Err(format!(
                "drawn on the device by the harness's kernel, element {element} of {} is {device:02x?} where the \
                 host's generator makes {host:02x?}: the device's drawing is not the host's, and the input is not used",
                bytes.len() / dtype.size()
            )),
        }
    }

    fn draw(
        &self,
        generator: &Generator,
        dtype: DType,
        shape: &[usize],
        seed: u64,
        (low, high): (i64, i64),
    ) -> Result<(engine::tensor::Tensor, Vec<u8>), String> {
        let text = |e: engine::EngineError| crate::runner::error_chain(&e);
        let module = self.module()?;
        let tensor = engine::tensor::Tensor::allocate(self.backend, dtype, shape).map_err(text)?;
        let elements = tensor.elements();
        let (kind, a, b) = match *generator {
            Generator::Normal { mean, std } => (0, mean.to_bits() as i64, std.to_bits() as i64),
            Generator::Uniform { low, high } => (1, low.to_bits() as i64, high.to_bits() as i64),
            // the range fits i64: `int_bounds` refuses one whose width overflows it
            _ => (2, low, high.wrapping_sub(low)),
        };
        let args = [
            KernelArg::Pointer(tensor.device_address()),
            KernelArg::I64(elements as i64),
            KernelArg::I64(seed as i64),
            KernelArg::I32(kind),
            KernelArg::I64(a),
            KernelArg::I64(b),
            KernelArg::I32(DType::ALL.iter().position(|d| *d == dtype).unwrap_or(0) as i32),
        ];
        let blocks = (elements as u64).div_ceil(BLOCK_THREADS as u64).clamp(1, MOST_BLOCKS) as u32;
        let dims = LaunchDims { grid: [blocks, 1, 1], block: [BLOCK_THREADS, 1, 1], dynamic_shared: 0 };
        module.launch(KERNEL, dims, Schedule::default(), &args).map_err(text)?;
        let bytes = tensor.read().map_err(text)?;
        Ok((tensor, bytes))
    }

    /// Writes `bytes` into `tensor` and seals it where it is checked so (a tensor of
    /// `HASHED_ON_DEVICE_BYTES` or more): a fresh key, and the device's hash with it found
    /// equal to the host's hash of `bytes` (else an error: the device does not hold what was
    /// sent); `None` where it is not checked so, and its checks read it back. The host's hash
    /// is made beside the copy (one is bound by the bus, the other by host memory).
    pub fn write_sealed(&self, tensor: &mut engine::tensor::Tensor, bytes: &[u8]) -> Result<Option<Seal>, String> {
        self.sent_sealed(tensor, bytes, |tensor| tensor.write(bytes).map_err(|e| crate::runner::error_chain(&e)))
    }

    /// `write_sealed` of a tensor drawn here (`Drawn`) whose bytes on the host the modifiers
    /// changed since: only the words they wrote go up (`patch`), and the seal's hash of the
    /// whole tensor against the host's bytes finds any they wrote and did not say.
    pub fn seal_drawn(&self, tensor: &mut engine::tensor::Tensor, bytes: &[u8], written: &Written) -> Result<Option<Seal>, String> {
        let short = ShortWords::of(written, written.long_runs(COPIED_RUN_BYTES / 8), bytes.len() / 8);
        if short.count() > bytes.len().div_ceil(8) / PAIRED_ONE_WORD_IN {
            return self.write_sealed(tensor, bytes);
        }
        self.sent_sealed(tensor, bytes, |tensor| self.patch(tensor, bytes, written, &short))
    }

    /// `bytes` sent into `tensor` by `send`, then sealed where it is checked so (else sent
    /// whole, unsealed); the host's hash made beside the sending.
    fn sent_sealed(
        &self,
        tensor: &mut engine::tensor::Tensor,
        bytes: &[u8],
        send: impl FnOnce(&mut engine::tensor::Tensor) -> Result<(), String>,
    ) -> Result<Option<Seal>, String> {
        if !self.hashed(tensor, &[bytes]) {
            return tensor.write(bytes).map(|()| None).map_err(|e| crate::runner::error_chain(&e));
        }
        let key = fresh_key();
        let words = bytes.len() / 8;
        let on_host = std::thread::scope(|scope| {
            let on_host = engine::threads::brief_scoped(scope, || keyed_hash_from(&bytes[..words * 8], key, 0));
            let sent = send(tensor);
            let on_host = on_host.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            sent.map(|()| on_host)
        });
        self.sealed_as(tensor, bytes, key, on_host?).map(Some)
    }

    /// `bytes`' written words (`written`) into `tensor`, which holds the rest: a run of
    /// `COPIED_RUN_BYTES` or more by a copy of its own, the others as (word, value) pairs that
    /// `kc_patch` stores, and the bytes past the last whole word by a copy of their own.
    fn patch(&self, tensor: &mut engine::tensor::Tensor, bytes: &[u8], written: &Written, short: &ShortWords) -> Result<(), String> {
        let text = |e: engine::EngineError| crate::runner::error_chain(&e);
        let whole = bytes.len() / 8;
        if bytes.len() > whole * 8 && written.marked(whole) {
            tensor.write_part(whole * 8, &bytes[whole * 8..]).map_err(text)?;
        }
        for run in &short.long_runs {
            let words = run.start..run.end.min(whole);
            tensor.write_part(words.start * 8, &bytes[words.start * 8..words.end * 8]).map_err(text)?;
        }
        let (places, values) = short.pairs(written, bytes);
        if places.is_empty() {
            return Ok(());
        }
        let count = places.len() / 8;
        let mut places_buffer = self.backend.allocate(places.len()).map_err(text)?;
        let mut values_buffer = self.backend.allocate(values.len()).map_err(text)?;
        places_buffer.write(0, &places).map_err(text)?;
        values_buffer.write(0, &values).map_err(text)?;
        let args = [
            KernelArg::Pointer(tensor.device_address()),
            KernelArg::Pointer(places_buffer.device_address()),
            KernelArg::Pointer(values_buffer.device_address()),
            KernelArg::I64(count as i64),
        ];
        let blocks = (count as u64).div_ceil(BLOCK_THREADS as u64).clamp(1, MOST_BLOCKS) as u32;
        let dims = LaunchDims { grid: [blocks, 1, 1], block: [BLOCK_THREADS, 1, 1], dynamic_shared: 0 };
        self.module()?
            .launch(PATCH_KERNEL, dims, Schedule::default(), &args)
            .map(|_| ())
            .map_err(|e| format!("the harness's patch of an input's written words: {}", text(e)))
    }

    /// The seal of `tensor` as it is, taken to hold `bytes` (`write_sealed` without the
    /// write: the tests' way to a tensor that does not hold what was sent); `None` where it is
    /// not checked so.
    #[cfg(test)]
    fn seal(&self, tensor: &engine::tensor::Tensor, bytes: &[u8]) -> Option<Result<Seal, String>> {
        self.hashed(tensor, &[bytes]).then(|| {
            let key = fresh_key();
            self.sealed_as(tensor, bytes, key, keyed_hash_from(&bytes[..bytes.len() / 8 * 8], key, 0))
        })
    }

    /// The seal of `tensor` with `key`, where the host's hash of `bytes` with it is `on_host`.
    fn sealed_as(&self, tensor: &engine::tensor::Tensor, bytes: &[u8], key: u64, on_host: u64) -> Result<Seal, String> {
        let words = bytes.len() / 8;
        let on_device = self.device_hash(tensor, words, key)?;
        if on_device != on_host || !self.tail_holds(tensor, words, &bytes[words * 8..])? {
            return Err(format!(
                "the device does not hold the {} bytes sent to it: its keyed hash is {on_device:#018x}, the host copy's \
                 {on_host:#018x} (or the bytes past the last whole word differ)",
                crate::format::count(bytes.len())
            ));
        }
        Ok(Seal { key, hash: on_device })
    }

    /// Whether `tensor` still holds what it held when `seal` was made of it (`bytes`, whose
    /// bytes past the last whole word are compared as they are), by the device's hash alone.
    pub fn holds_sealed(&self, tensor: &engine::tensor::Tensor, seal: &Seal, bytes: &[u8]) -> Result<bool, String> {
        self.holds_sealed_parts(tensor, seal, &[bytes])
    }

    /// The seal of `tensor` as the device holds it now, taken to be `parts` one after another:
    /// gate 5's piece of rows, copied on the device from the whole batch's tensor (sealed;
    /// gate 3's check after the pieces finds it unchanged against its seal, or the pieces run
    /// again from the host's bytes), so that the check after the piece's launch needs no host
    /// pass over its rows (6.4 GB a record of tf_sum_partials' GPU-only case). A copy that went
    /// wrong is not caught here but by the piece's outputs, as a wrong input is; a kernel that
    /// ignores that input is not changed by it. `None` where it is not checked so
    /// (`holds_parts`).
    pub fn seal_as_copied(&self, tensor: &engine::tensor::Tensor, parts: &[&[u8]]) -> Option<Result<Seal, String>> {
        self.hashed(tensor, parts).then(|| {
            let key = fresh_key();
            self.device_hash(tensor, tensor.bytes() / 8, key).map(|hash| Seal { key, hash })
        })
    }

    /// `holds_sealed` of `parts` one after another (all but the last of whole 64-bit words).
    pub fn holds_sealed_parts(&self, tensor: &engine::tensor::Tensor, seal: &Seal, parts: &[&[u8]]) -> Result<bool, String> {
        let words = parts.iter().map(|part| part.len()).sum::<usize>() / 8;
        let last = parts.last().copied().unwrap_or_default();
        Ok(self.device_hash(tensor, words, seal.key)? == seal.hash && self.tail_holds(tensor, words, &last[last.len() / 8 * 8..])?)
    }

    /// Whether `tensor`'s data on the device is `parts` one after another (gate 5's piece of
    /// rows, taken from the whole batch's bytes without copying them together), by the keyed
    /// hash of both (a fresh key each call); `None` where it is not checked so (a tensor under
    /// `HASHED_ON_DEVICE_BYTES`, or a part but the last not of whole 64-bit words), and the
    /// caller reads it back.
    pub fn holds_parts(&self, tensor: &engine::tensor::Tensor, parts: &[&[u8]]) -> Option<Result<bool, String>> {
        self.hashed(tensor, parts).then(|| self.hash_matches(tensor, parts))
    }

    /// The check of a later launch's output in `tensor` against `first`, the first launch's bytes
    /// of it; `None` where the output is not checked so (under `REPEAT_HASHED_BYTES`, or not at a
    /// 64-bit word), and each launch is read back.
    pub fn repeat_check(&self, tensor: &engine::tensor::Tensor, first: &[u8]) -> Option<RepeatCheck> {
        let hashed = tensor.bytes() >= REPEAT_HASHED_BYTES && tensor.device_address().is_multiple_of(8) && first.len() == tensor.bytes();
        hashed.then(|| {
            let (key, words) = (fresh_key(), first.len() / 8);
            RepeatCheck { key, on_host: keyed_hash_from(&first[..words * 8], key, 0), words, tail: first[words * 8..].to_vec() }
        })
    }

    /// Whether `tensor` holds the first launch's bytes `check` was made of: the device's hash
    /// with its key, and the bytes past the last whole word read back. Bytes that differ are
    /// read back by the caller, for gate 2's elements.
    pub fn repeats_first(&self, tensor: &engine::tensor::Tensor, check: &RepeatCheck) -> Result<bool, String> {
        Ok(self.device_hash(tensor, check.words, check.key)? == check.on_host && self.tail_holds(tensor, check.words, &check.tail)?)
    }

    /// Whether `tensor`, to hold `parts` one after another, is checked by the hash.
    fn hashed(&self, tensor: &engine::tensor::Tensor, parts: &[&[u8]]) -> bool {
        let aligned = tensor.device_address().is_multiple_of(8);
        let whole_words = parts.iter().rev().skip(1).all(|part| part.len().is_multiple_of(8));
        let bytes: usize = parts.iter().map(|part| part.len()).sum();
        tensor.bytes() >= HASHED_ON_DEVICE_BYTES && aligned && whole_words && bytes == tensor.bytes() && !parts.is_empty()
    }

    /// `parts` holds whole 64-bit words but for the last, and is not empty.
    fn hash_matches(&self, tensor: &engine::tensor::Tensor, parts: &[&[u8]]) -> Result<bool, String> {
        let key = fresh_key();
        let bytes: usize = parts.iter().map(|part| part.len()).sum();
        let words = bytes / 8;
        let on_device = self.device_hash(tensor, words, key)?;
        let mut on_host = 0u64;
        let mut first_word = 0u64;
        for part in parts {
            let whole = part.len() / 8 * 8;
            on_host = on_host.wrapping_add(keyed_hash_from(&part[..whole], key, first_word));
            first_word += (whole / 8) as u64;
        }
        // the bytes past the last whole word (of the last part), compared as they are
        let last = parts.last().expect("a part");
        Ok(on_device == on_host && self.tail_holds(tensor, words, &last[last.len() / 8 * 8..])?)
    }

    /// `kc_hash` of the first `words` 64-bit words of `tensor`'s data with `key`, on the device.
    fn device_hash(&self, tensor: &engine::tensor::Tensor, words: usize, key: u64) -> Result<u64, String> {
        let text = |e: engine::EngineError| crate::runner::error_chain(&e);
        let module = self.module()?;
        let threads = (words as u64).div_ceil(BLOCK_THREADS as u64).clamp(1, HASH_BLOCKS) * BLOCK_THREADS as u64;
        let partials = self.backend.allocate(threads as usize * 8).map_err(text)?;
        let args = [
            KernelArg::Pointer(tensor.device_address()),
            KernelArg::I64(words as i64),
            KernelArg::I64(key as i64),
            KernelArg::Pointer(partials.device_address()),
        ];
        let dims = LaunchDims { grid: [(threads / BLOCK_THREADS as u64) as u32, 1, 1], block: [BLOCK_THREADS, 1, 1], dynamic_shared: 0 };
        module.launch(HASH_KERNEL, dims, Schedule::default(), &args).map_err(|e| format!("the harness's hash of a tensor: {}", text(e)))?;
        let mut sums = vec![0u8; threads as usize * 8];
        partials.read(0, &mut sums).map_err(text)?;
        Ok(sums.chunks_exact(8).fold(0u64, |sum, w| sum.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()))))
    }

    /// Whether `tensor`'s bytes past its first `words` whole words are `want` (fewer than 8).
    fn tail_holds(&self, tensor: &engine::tensor::Tensor, words: usize, want: &[u8]) -> Result<bool, String> {
        let mut tail = vec![0u8; want.len()];
        if !tail.is_empty() {
            tensor.read_part(words * 8, &mut tail).map_err(|e| crate::runner::error_chain(&e))?;
        }
        Ok(tail == want)
    }

    /// The kernel, built by the backend from its source written into the build cache (a file
    /// named by its text's hash, as every source the backend builds is a file).
    fn module(&self) -> Result<Arc<dyn Module>, String> {
        let path = self.source_file().map_err(|e| format!("writing the drawing kernel's source into {}: {e}", self.cache_dir.display()))?;
        let source = KernelSource {
            display_path: format!("(the harness's input drawing, {})", path.file_name().unwrap_or_default().to_string_lossy()),
            path,
            kernels: vec![KERNEL.to_string(), HASH_KERNEL.to_string(), PATCH_KERNEL.to_string()],
            include_dirs: Vec::new(),
        };
        self.backend.load_module(&source).map_err(|e| format!("building the harness's drawing kernel: {}", crate::runner::error_chain(&e)))
    }

    fn source_file(&self) -> std::io::Result<PathBuf> {
        // checked or written once per process and cache folder: every draw and every hash
        // check of gate 3 asks for the module, and the file does not change under one run
        static CHECKED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
        let folder = self.cache_dir.join("harness-draw");
        let path = folder.join(format!("draw-{:016x}.hip", crate::selection::fnv1a(SOURCE.as_bytes())));
        let mut checked = CHECKED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if checked.contains(&path) {
            return Ok(path);
        }
        Self::write_source(&folder, &path)?;
        checked.push(path.clone());
        Ok(path)
    }

    fn write_source(folder: &Path, path: &Path) -> std::io::Result<()> {
        if std::fs::read(path).is_ok_and(|text| text == SOURCE.as_bytes()) {
            return Ok(());
        }
        std::fs::create_dir_all(folder)?;
        // written whole under a name of this process, then renamed: a run beside this one
        // reads the old file or the new, never half of one
        let partial = folder.join(format!(".draw-{}.hip", std::process::id()));
        std::fs::write(&partial, SOURCE)?;
        std::fs::rename(&partial, path)
    }
}

/// Bit words of `Written` a piece of `ShortWords` takes (256 Ki words).
const PAIRED_PIECE_BIT_WORDS: usize = 1 << 12;

/// The words `Written` marks outside its runs of `COPIED_RUN_BYTES` or more (`long_runs`) and
/// below the last whole word, counted in pieces of its bits on the host's cores: how many
/// decides whether they go up as pairs (`PAIRED_ONE_WORD_IN`), and the counts place each
/// piece's pairs (`pairs`).
struct ShortWords {
    long_runs: Vec<std::ops::Range<usize>>,
    /// The words below this one (the tensor's whole words).
    whole: usize,
    pieces: Vec<std::ops::Range<usize>>,
    counts: Vec<usize>,
}

impl ShortWords {
    fn of(written: &Written, long_runs: Vec<std::ops::Range<usize>>, whole: usize) -> ShortWords {
        use rayon::prelude::*;
        let pieces: Vec<std::ops::Range<usize>> = (0..written.bit_words())
            .step_by(PAIRED_PIECE_BIT_WORDS)
            .map(|first| first..(first + PAIRED_PIECE_BIT_WORDS).min(written.bit_words()))
            .collect();
        let mut short = ShortWords { long_runs, whole, pieces, counts: Vec::new() };
        short.counts =
            short.pieces.par_iter().map(|piece| piece.clone().map(|w| short.bits(written, w).count_ones() as usize).sum()).collect();
        short
    }

    fn count(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The bits of bit word `bit_word` of the short words.
    fn bits(&self, written: &Written, bit_word: usize) -> u64 {
        let below_whole = match self.whole.saturating_sub(bit_word * 64) {
            0 => 0,
            n if n >= 64 => u64::MAX,
            n => u64::MAX >> (64 - n),
        };
        written.bits_outside(bit_word, &self.long_runs) & below_whole
    }

    /// The short words of `bytes`, in order, as `kc_patch`'s (word, value) pairs: each word's
    /// index and its 8 bytes, little endian, made in the pieces on the host's cores (a few words
    /// of every row of a 4 GiB cache are 32 M pairs, which one thread made in 1.34 to 1.50 s a
    /// record on an H100).
    fn pairs(&self, written: &Written, bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
        use rayon::prelude::*;
        let pairs = self.count();
        let (mut places, mut values) = (vec![0u8; pairs * 8], vec![0u8; pairs * 8]);
        let mut each_piece = Vec::with_capacity(self.pieces.len());
        let (mut places_left, mut values_left) = (places.as_mut_slice(), values.as_mut_slice());
        for count in &self.counts {
            let (piece_places, rest_places) = places_left.split_at_mut(count * 8);
            let (piece_values, rest_values) = values_left.split_at_mut(count * 8);
            each_piece.push((piece_places, piece_values));
            (places_left, values_left) = (rest_places, rest_values);
        }
        self.pieces.par_iter().zip(each_piece).for_each(|(piece, (places, values))| {
            let (mut places, mut values) = (places.chunks_exact_mut(8), values.chunks_exact_mut(8));
            for bit_word in piece.clone() {
                let mut bits = self.bits(written, bit_word);
                while bits != 0 {
                    let word = bit_word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    places.next().expect("counted").copy_from_slice(&(word as u64).to_le_bytes());
                    values.next().expect("counted").copy_from_slice(&bytes[word * 8..word * 8 + 8]);
                }
            }
        });
        (places, values)
    }
}

/// `kc_hash`'s terms of `bytes` (whole 64-bit words) as the words from `first_word` on of a
/// longer run (0: `kc_hash` of `bytes`), summed on the host's cores.
fn keyed_hash_from(bytes: &[u8], key: u64, first_word: u64) -> u64 {
    use rayon::prelude::*;
    const PIECE_WORDS: usize = 1 << 17;
    bytes
        .par_chunks(PIECE_WORDS * 8)
        .enumerate()
        .map(|(piece, chunk)| hash_terms(chunk, key, first_word.wrapping_add((piece * PIECE_WORDS) as u64)))
        .reduce(|| 0, u64::wrapping_add)
}

/// The sum of `kc_hash`'s terms of `words` (whole 64-bit words) as words `first..` of a run:
/// on x86-64 with AVX-512 (DQ: 64-bit multiplies of 8 lanes) where the CPU has it, the same
/// terms and the same wrapping sum (so the same bits).
fn hash_terms(words: &[u8], key: u64, first: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has AVX-512F and DQ, all that the function's target features ask for
        return unsafe { hash_terms_avx512(words, key, first) };
    }
    hash_terms_portable(words, key, first)
}

#[inline(always)]
fn hash_terms_portable(words: &[u8], key: u64, first: u64) -> u64 {
    words.chunks_exact(8).enumerate().fold(0u64, |sum, (i, word)| {
        let word = u64::from_le_bytes(word.try_into().unwrap());
        sum.wrapping_add(super::mix((word ^ key).wrapping_add(first.wrapping_add(i as u64 + 1).wrapping_mul(super::GOLDEN_GAMMA))))
    })
}

/// `hash_terms_portable` compiled for AVX-512: the compiler makes eight terms a vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn hash_terms_avx512(words: &[u8], key: u64, first: u64) -> u64 {
    hash_terms_portable(words, key, first)
}

/// A key no kernel under test has seen: the standard library's per-process random keys, mixed
/// with a count of the calls.
fn fresh_key() -> u64 {
    use std::hash::BuildHasher;
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::hash::RandomState::new().hash_one(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// The first sampled element whose bytes differ from the host generator's: its index and
/// both bytes.
fn first_difference(generator: &Generator, dtype: DType, bytes: &[u8], seed: u64, bounds: (i64, i64)) -> Option<(usize, Vec<u8>, Vec<u8>)> {
    let size = dtype.size();
    let elements = bytes.len() / size;
    let mut want = vec![0u8; size];
    sampled_elements(elements, seed).into_iter().find_map(|element| {
        dtype.encode(generator.value_at(seed, element, bounds), &mut want);
        let got = &bytes[element * size..(element + 1) * size];
        (got != want.as_slice()).then(|| (element, got.to_vec(), want.clone()))
    })
}

/// Both ends, an even spread and places drawn from the tensor's seed.
fn sampled_elements(elements: usize, seed: u64) -> Vec<usize> {
    let mut sampled: Vec<usize> = (0..ENDS_CHECKED.min(elements)).collect();
    sampled.extend(elements.saturating_sub(ENDS_CHECKED)..elements);
    let step = (elements / SPREAD_CHECKED).max(1);
    sampled.extend((0..elements).step_by(step));
    let mut places = SeededStream::new(seed ^ 0x6472_6177_6e5f_6f6e);
    sampled.extend((0..SEEDED_CHECKED).map(|_| places.next_int(0, elements.max(1) as i64) as usize).filter(|e| *e < elements));
    sampled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host backend (the repository's prelude), building into `cache`: it runs the
    /// harness's kernels as it runs any, so the tests see what a device would make.
    fn host_backend(cache: &Path) -> engine::backend::host::HostBackend {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let options = engine::backend::host::HostOptions {
            prelude: root.join("kernels/host/prelude.h"),
            cache_dir: cache.join("host"),
            workers: 2,
            warp_size: 32,
        };
        engine::backend::host::HostBackend::new(options).unwrap()
    }

    /// The kernel on the host backend (g++, the host prelude) makes the host generator's
    /// bytes for every generator and type, past the sampled places too: the whole tensor is
    /// compared here. The device builds the same source with the same rounding rules.
    #[test]
    fn the_drawing_kernel_makes_the_host_generators_bytes_in_every_type() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        let symbols: Symbols = [("vocab".to_string(), 70_001i64)].into();
        let generators = [
            "normal(0, 1)",
            "normal(-3, 0.37)",
            "normal(0, 1e-6)",
            "uniform(0.001, 0.1)",
            "uniform(-64, 64)",
            "int(0, vocab)",
            "int(-5, 4294967296)",
            "int(-9000000000, 9000000000)",
        ];
        for text in generators {
            let generator = Generator::parse(text).unwrap();
            let bounds = generator.int_bounds(&symbols).unwrap();
            for dtype in DType::ALL {
                let elements = 40_000 + dtype.size();
                let (_, drawn) = draw.draw(&generator, dtype, &[elements], 0x5eed, bounds).unwrap();
                let host = generator.generate(dtype, elements, 0x5eed, &symbols).unwrap();
                let differ = drawn.chunks(dtype.size()).zip(host.chunks(dtype.size())).position(|(a, b)| a != b);
                assert_eq!(differ, None, "{text} in {dtype}");
            }
        }
    }

    /// The hash kernel on the host backend agrees with the host's hash of the same bytes, and a
    /// change of one bit anywhere (a whole word's, or the bytes past the last whole one) shows.
    #[test]
    fn the_hash_on_the_device_is_the_hosts_and_sees_one_changed_bit() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        // more words than the hash's threads, and three bytes past the last whole word
        let elements = (HASH_BLOCKS * BLOCK_THREADS as u64 * 4 + 3) as usize;
        let before = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, elements, 9, &Symbols::new()).unwrap();
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[elements]).unwrap();
        tensor.write(&before).unwrap();
        assert!(draw.hash_matches(&tensor, &[&before]).unwrap());
        assert!(draw.hash_matches(&tensor, &[&before]).unwrap(), "with another key");
        // the same bytes in parts (a piece's runs of rows), each part's words at their places
        let (a, b) = (8 * 1001, 8 * (elements / 16));
        assert!(draw.hash_matches(&tensor, &[&before[..a], &before[a..b], &before[b..]]).unwrap());
        let swapped = [&before[8..16], &before[..8], &before[16..]];
        assert!(before[..8] != before[8..16] && !draw.hash_matches(&tensor, &swapped).unwrap(), "two words swapped");
        for at in [0, elements / 2 + 5, elements - 9, elements - 1] {
            let mut changed = before.clone();
            changed[at] ^= 0x10;
            tensor.write(&changed).unwrap();
            assert!(!draw.hash_matches(&tensor, &[&before]).unwrap(), "a bit of byte {at} changed");
            assert!(!draw.hash_matches(&tensor, &[&before[..a], &before[a..]]).unwrap(), "in parts, a bit of byte {at} changed");
        }
        assert_ne!(keyed_hash_from(&before[..64], 1, 0), keyed_hash_from(&before[..64], 2, 0), "the key counts");
    }

    /// A tensor sealed as it went up is checked by the device's hash alone: it holds while
    /// nothing changed, a changed bit in a whole word or past the last one shows, and a seal of
    /// bytes the device does not hold is refused as the upload's fault, naming both hashes.
    #[test]
    fn a_sealed_tensor_is_checked_on_the_device_and_a_wrong_upload_is_refused() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        let elements = HASHED_ON_DEVICE_BYTES + 5;
        let bytes = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, elements, 3, &Symbols::new()).unwrap();
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[elements]).unwrap();
        let seal = draw.write_sealed(&mut tensor, &bytes).unwrap().expect("a large tensor is sealed");
        assert_eq!(tensor.read().unwrap(), bytes, "written");
        assert!(draw.holds_sealed(&tensor, &seal, &bytes).unwrap());
        assert!(draw.holds_sealed(&tensor, &seal, &bytes).unwrap(), "again, the same key");
        for at in [0, elements / 2 + 3, elements - 6, elements - 1] {
            let mut changed = bytes.clone();
            changed[at] ^= 0x40;
            tensor.write(&changed).unwrap();
            assert!(!draw.holds_sealed(&tensor, &seal, &bytes).unwrap(), "a bit of byte {at} changed");
            let refused = draw.seal(&tensor, &bytes).unwrap().unwrap_err();
            assert!(refused.starts_with("the device does not hold the 67,108,869 bytes sent to it: its keyed hash is 0x"), "{refused}");
        }
        tensor.write(&bytes).unwrap();
        assert!(draw.holds_sealed(&tensor, &seal, &bytes).unwrap(), "the bytes back as sealed");
        let mut small = engine::tensor::Tensor::allocate(&backend, DType::U8, &[64]).unwrap();
        assert!(draw.write_sealed(&mut small, &[3u8; 64]).unwrap().is_none(), "a small tensor is read back instead");
        assert_eq!(small.read().unwrap(), [3u8; 64], "and written");
        // gate 3's check through the seal: green as sealed, a changed element named as read back
        let check = |tensor: &engine::tensor::Tensor| crate::runner::input_check(tensor, &bytes, Some((&draw, &seal))).unwrap();
        assert!(check(&tensor).is_none());
        let mut changed = bytes.clone();
        changed[elements - 2] ^= 1;
        tensor.write(&changed).unwrap();
        let failure = check(&tensor).expect("a changed input");
        assert!(failure.message.starts_with("input changed: 1 of 67,108,869 elements, first [67108867]"), "{}", failure.message);
    }

    /// The vectors' sum is the one word at a time, whatever the length and the first word's
    /// place (on a CPU without AVX-512 both are the portable code).
    #[test]
    fn the_hash_terms_on_vectors_are_the_ones_a_word_at_a_time() {
        let bytes: Vec<u8> = (0..(1 << 16) * 8 + 24).map(|i: usize| (i * 7 % 251) as u8).collect();
        for (words, first) in [(0, 0), (1, 0), (7, 5), (8, 1 << 40), (9, 3), (1000, 17), (1 << 16, 0), ((1 << 16) + 3, u64::MAX - 2)] {
            let part = &bytes[..words * 8];
            assert_eq!(hash_terms(part, 0xfeed, first), hash_terms_portable(part, 0xfeed, first), "{words} words from {first}");
        }
    }

    /// A tensor drawn on the device and changed on the host since gets the written words
    /// alone (scattered words, a run long enough for a copy of its own, the bytes past the last
    /// whole word) and is sealed against the host's bytes; a changed word left unmarked is
    /// refused as the device not holding what the host does.
    #[test]
    fn a_drawn_tensor_gets_its_written_words_alone_and_a_word_not_marked_is_refused() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        let elements = HASHED_ON_DEVICE_BYTES + 5;
        let drawn = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, elements, 4, &Symbols::new()).unwrap();
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[elements]).unwrap();
        tensor.write(&drawn).unwrap();
        let mut bytes = drawn.clone();
        let written = Written::new(elements);
        let mut change = |range: std::ops::Range<usize>| {
            range.clone().for_each(|at| bytes[at] = !bytes[at]);
            written.mark(range);
        };
        for at in [0, 9, 4096 + 3, elements / 2, elements - 7] {
            change(at..at + 1);
        }
        change(1000..1000 + COPIED_RUN_BYTES + 13);
        change(elements - 2..elements);
        let seal = draw.seal_drawn(&mut tensor, &bytes, &written).unwrap().expect("a large tensor is sealed");
        assert!(tensor.read().unwrap() == bytes, "the device holds the host's bytes");
        assert!(draw.holds_sealed(&tensor, &seal, &bytes).unwrap());
        let marked: usize = written.runs().iter().map(|run| run.len()).sum();
        assert!(marked < (COPIED_RUN_BYTES + 100) / 8, "{marked} words sent");
        // a changed word the modifiers did not mark
        tensor.write(&drawn).unwrap();
        let mut unmarked = bytes.clone();
        unmarked[elements / 3] ^= 1;
        let refused = draw.seal_drawn(&mut tensor, &unmarked, &written).unwrap_err();
        assert!(refused.starts_with("the device does not hold the 67,108,869 bytes sent to it"), "{refused}");
        // written words more than one in `PAIRED_ONE_WORD_IN`: the tensor goes up whole
        tensor.write(&drawn).unwrap();
        let dense = Written::new(elements);
        let mut many = drawn.clone();
        for word in (0..elements / 8).step_by(PAIRED_ONE_WORD_IN / 2) {
            many[word * 8] ^= 0x80;
            dense.mark(word * 8..word * 8 + 1);
        }
        let seal = draw.seal_drawn(&mut tensor, &many, &dense).unwrap().expect("sealed");
        assert!(tensor.read().unwrap() == many && draw.holds_sealed(&tensor, &seal, &many).unwrap());
        // a tensor under the hash's size gets the bytes whole, unsealed
        let mut small = engine::tensor::Tensor::allocate(&backend, DType::U8, &[64]).unwrap();
        assert!(draw.seal_drawn(&mut small, &[5u8; 64], &Written::new(64)).unwrap().is_none());
        assert_eq!(small.read().unwrap(), [5u8; 64]);
    }

    /// The pairs are the words marked outside the long runs and below the last whole word, in
    /// order, each with its bytes, across the pieces' edges.
    #[test]
    fn the_pairs_are_the_short_runs_words_in_order_with_their_bytes() {
        let bytes: Vec<u8> = (0..(3 * PAIRED_PIECE_BIT_WORDS * 64 + 100) * 8 + 5).map(|i| (i * 7 % 251) as u8).collect();
        let written = Written::new(bytes.len());
        let piece_edge = PAIRED_PIECE_BIT_WORDS * 64;
        for word in [0, 5, piece_edge - 1, piece_edge, 2 * piece_edge + 3, bytes.len() / 8 - 1] {
            written.mark(word * 8..word * 8 + 1);
        }
        written.mark(piece_edge + 10..piece_edge + 10 + COPIED_RUN_BYTES + 64);
        written.mark(bytes.len() - 2..bytes.len());
        let short = ShortWords::of(&written, written.long_runs(COPIED_RUN_BYTES / 8), bytes.len() / 8);
        assert_eq!(short.long_runs.len(), 1);
        assert_eq!(short.count(), 6);
        let (places, values) = short.pairs(&written, &bytes);
        let words: Vec<usize> = places.chunks_exact(8).map(|p| u64::from_le_bytes(p.try_into().unwrap()) as usize).collect();
        assert_eq!(words, [0, 5, piece_edge - 1, piece_edge, 2 * piece_edge + 3, bytes.len() / 8 - 1]);
        for (word, value) in words.iter().zip(values.chunks_exact(8)) {
            assert_eq!(value, &bytes[word * 8..word * 8 + 8], "word {word}");
        }
    }

    /// An input drawn into its own tensor end to end: the host's generated bytes (with the
    /// special values and a row a modifier rewrote), held by the tensor and sealed.
    #[test]
    fn an_input_drawn_into_its_tensor_is_the_hosts_bytes_on_the_device_and_sealed() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        let spec = crate::inputs::InputSpec::parse("uniform(-1, 1) | ascending_row(1) | nonfinite").unwrap();
        let shape = [64, DRAWN_ON_DEVICE_BYTES / 4 / 64 + 3];
        let symbols = Symbols::new();
        let Drawn { mut tensor, bytes, written } = spec.draw_into(&draw, DType::F32, &shape, 21, &symbols).expect("drawn").unwrap();
        assert!(bytes == spec.generate(DType::F32, &shape, 21, &symbols).unwrap(), "the host's bytes");
        let seal = draw.seal_drawn(&mut tensor, &bytes, &written).unwrap().expect("sealed");
        assert!(tensor.read().unwrap() == bytes, "the device holds them");
        assert!(draw.holds_sealed(&tensor, &seal, &bytes).unwrap());
        assert!(spec.draw_into(&draw, DType::F32, &[4, 1024], 21, &symbols).is_none(), "a small input is drawn on the host");
    }

    /// A later launch's output of `REPEAT_HASHED_BYTES` or more is held to the first launch's
    /// bytes by the hash: the same bytes pass, one changed bit in its words or in the bytes past
    /// the last whole word does not; a smaller output is read back.
    #[test]
    fn a_later_launchs_large_output_is_held_to_the_first_by_the_hash() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        let bytes = REPEAT_HASHED_BYTES + 3;
        let first = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, bytes, 9, &Symbols::new()).unwrap();
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[bytes]).unwrap();
        tensor.write(&first).unwrap();
        let check = draw.repeat_check(&tensor, &first).expect("hashed");
        assert!(draw.repeats_first(&tensor, &check).unwrap());
        for place in [12_345, bytes - 1] {
            let mut changed = first.clone();
            changed[place] ^= 0x10;
            tensor.write(&changed).unwrap();
            assert!(!draw.repeats_first(&tensor, &check).unwrap(), "byte {place} changed");
        }
        let small = engine::tensor::Tensor::allocate(&backend, DType::U8, &[1024]).unwrap();
        assert!(draw.repeat_check(&small, &[0; 1024]).is_none());
    }

    /// Gate 5's check of a piece's input of 64 MiB or more goes through the hash (its runs of
    /// rows taken from the whole batch's bytes in place), and a changed byte is still named.
    #[test]
    fn a_pieces_large_input_is_checked_by_the_hash_in_runs_of_rows() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        // 4 rows of 24 MiB; the piece is rows 0, 2 and 3 (72 MiB: two runs)
        let row_bytes = 24 << 20;
        let whole = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, 4 * row_bytes, 5, &Symbols::new()).unwrap();
        let piece = [0, 2, 3];
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[3, row_bytes]).unwrap();
        let gathered: Vec<u8> = piece.iter().flat_map(|r| whole[r * row_bytes..(r + 1) * row_bytes].iter().copied()).collect();
        tensor.write(&gathered).unwrap();
        let parts = [&whole[..row_bytes], &whole[2 * row_bytes..]];
        assert!(matches!(draw.holds_parts(&tensor, &parts), Some(Ok(true))), "checked by the hash");
        assert_eq!(
            crate::seams::piece_input_changed(&tensor, &whole, (&piece, row_bytes), Some((&draw, None))).unwrap().map(|f| f.message),
            None
        );
        let mut changed = gathered.clone();
        changed[row_bytes + 7] ^= 1;
        tensor.write(&changed).unwrap();
        assert!(matches!(draw.holds_parts(&tensor, &parts), Some(Ok(false))));
        let failure =
            crate::seams::piece_input_changed(&tensor, &whole, (&piece, row_bytes), Some((&draw, None))).unwrap().expect("a change");
        assert!(failure.message.contains("1 of 75,497,472 elements, first [1, 7]"), "{}", failure.message);
        // a part of a word's fraction before the last: read back instead
        assert!(draw.holds_parts(&tensor, &[&gathered[..3], &gathered[3..]]).is_none());
    }

    /// A piece copied on the device from the whole batch's tensor is sealed as copied, and
    /// gate 5's check after its launch hashes it against that seal: green unchanged, a changed
    /// byte in a whole word or past the last one named as read back.
    #[test]
    fn a_piece_sealed_as_copied_is_checked_against_its_seal() {
        let cache = tempfile::tempdir().unwrap();
        let backend = host_backend(cache.path());
        let draw = DeviceDraw::anywhere(&backend, cache.path());
        // 4 rows of 40 MiB and 3 bytes; the piece is rows 2 and 3 (one run, 6 bytes past the last word)
        let row_bytes = (40 << 20) + 3;
        let whole = Generator::parse("int(0, 256)").unwrap().generate(DType::U8, 4 * row_bytes, 9, &Symbols::new()).unwrap();
        let mut source = engine::tensor::Tensor::allocate(&backend, DType::U8, &[4, row_bytes]).unwrap();
        source.write(&whole).unwrap();
        let piece = [2, 3];
        let mut tensor = engine::tensor::Tensor::allocate(&backend, DType::U8, &[2, row_bytes]).unwrap();
        backend.copy(tensor.device_address(), source.device_address() + 2 * row_bytes as u64, 2 * row_bytes).unwrap();
        let parts = [&whole[2 * row_bytes..]];
        let seal = draw.seal_as_copied(&tensor, &parts).expect("a large piece is sealed").unwrap();
        let check = |tensor: &engine::tensor::Tensor| {
            crate::seams::piece_input_changed(tensor, &whole, (&piece, row_bytes), Some((&draw, Some(&seal)))).unwrap()
        };
        assert!(draw.holds_sealed_parts(&tensor, &seal, &parts).unwrap());
        assert_eq!(check(&tensor).map(|f| f.message), None);
        let copied = tensor.read().unwrap();
        for at in [5, row_bytes + 1, 2 * row_bytes - 2] {
            let mut changed = copied.clone();
            changed[at] ^= 0x20;
            tensor.write(&changed).unwrap();
            assert!(!draw.holds_sealed_parts(&tensor, &seal, &parts).unwrap(), "byte {at} changed");
            let failure = check(&tensor).expect("a change");
            let first = format!("first [{}, {}]", at / row_bytes, at % row_bytes);
            assert!(failure.message.contains(&format!("1 of 83,886,086 elements, {first}")), "{}", failure.message);
        }
        assert!(
            draw.seal_as_copied(&tensor, &[&whole[2 * row_bytes..3 * row_bytes], &whole[3 * row_bytes..]]).is_none(),
            "a part of a word's fraction before the last"
        );
    }

    /// The kernels build for both GPU targets with their own compilers (clang-22 for gfx1201,
    /// NVRTC for sm_90: CI installs both), as the hip and cuda backends build them, and each
    /// fits a block of 256 threads without spilling.
    #[test]
    fn the_drawing_kernel_builds_for_gfx1201_and_sm_90() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let cache = tempfile::tempdir().unwrap();
        let preludes = engine::backend::preludes::Preludes::locate(&root.join("kernels"), cache.path()).unwrap();
        let path = DeviceDraw::anywhere(&NoDevice, cache.path()).source_file().unwrap();
        let kernels = [KERNEL, HASH_KERNEL, PATCH_KERNEL];
        let source =
            KernelSource { display_path: "draw.hip".into(), path, kernels: kernels.map(String::from).to_vec(), include_dirs: Vec::new() };
        let mut compilers: Vec<Box<dyn engine::backend::StaticCompiler>> = Vec::new();
        match engine::amdgpu::HipClang::discover() {
            Ok(clang) => compilers.push(Box::new(engine::amdgpu::Gfx1201Static {
                clang,
                arch: "gfx1201".into(),
                prelude: preludes.hip_static(),
                cache_dir: cache.path().join("gfx1201"),
            })),
            Err(e) => eprintln!("gfx1201 not built: {e}"),
        }
        match engine::backend::cuda::nvrtc::Nvrtc::shared() {
            Ok(_) => compilers.push(Box::new(engine::backend::cuda::NvrtcStatic { arch: "sm_90".into(), prelude: preludes.cuda() })),
            Err(e) => eprintln!("sm_90 not built: {e}"),
        }
        if std::env::var_os("CI").is_some() {
            assert_eq!(compilers.len(), 2, "CI has both compilers");
        }
        for (compiler, kernel) in compilers.iter().flat_map(|compiler| kernels.map(|kernel| (compiler, kernel))) {
            let usage = compiler.resource_usage(&source, kernel).unwrap_or_else(|e| panic!("{} {kernel}: {e}", compiler.arch()));
            let figure = |name: &str| usage.figures.get(name).copied().unwrap_or(0);
            assert!(figure("threads") == 0 || figure("threads") >= BLOCK_THREADS as u64, "{} {kernel}: {usage:?}", compiler.arch());
            assert_eq!(figure("vgpr_spills") + figure("local"), 0, "{} {kernel}: {usage:?}", compiler.arch());
        }
    }

    /// A backend for writing the source file alone.
    struct NoDevice;

    impl Backend for NoDevice {
        fn name(&self) -> &'static str {
            "none"
        }
        fn arch(&self) -> String {
            "none".into()
        }
        fn toolchain(&self) -> String {
            String::new()
        }
        fn device_memory(&self) -> Option<u64> {
            None
        }
        fn allocate(&self, _: usize) -> Result<Box<dyn engine::backend::DeviceBuffer>, engine::EngineError> {
            unreachable!()
        }
        fn load_module(&self, _: &KernelSource) -> Result<Arc<dyn Module>, engine::EngineError> {
            unreachable!()
        }
    }

    #[test]
    fn a_drawn_tensor_that_differs_from_the_host_at_a_sampled_element_is_refused() {
        let generator = Generator::parse("normal(0, 1)").unwrap();
        let mut bytes = generator.generate(DType::Bf16, 100_000, 3, &Symbols::new()).unwrap();
        assert_eq!(first_difference(&generator, DType::Bf16, &bytes, 3, (0, 0)), None);
        // the last element is always sampled
        bytes[199_999] ^= 0x40;
        let (element, ..) = first_difference(&generator, DType::Bf16, &bytes, 3, (0, 0)).expect("seen");
        assert_eq!(element, 99_999);
    }

    #[test]
    fn only_large_tensors_of_generators_with_finite_values_are_drawn_on_a_device() {
        let normal = Generator::parse("normal(0, 1)").unwrap();
        assert!(DeviceDraw::takes(&normal, DType::F32, 16 << 20));
        assert!(!DeviceDraw::takes(&normal, DType::F32, (16 << 20) - 1));
        assert!(!DeviceDraw::takes(&Generator::parse("const(2)").unwrap(), DType::F32, 1 << 30));
        assert!(!DeviceDraw::takes(&Generator::parse("uniform(-1e308, 1e308)").unwrap(), DType::F32, 1 << 30));
    }
}
