//! Which 64-bit words of a tensor's bytes the modifiers wrote: a large input drawn on the
//! device into its own tensor is read back, modified on the host, and only those words go up
//! again where they are few (the special values touch a few elements of every row: 2 M words
//! of an 8 GiB f32 table of rows of 4,096, where uploading it whole took 1.5 s a record on an
//! H100). A word left out here would
//! leave the device holding the drawn value; the seal's hash of the whole tensor against the
//! host's bytes then refuses the input, so a modifier that forgets to say what it wrote makes
//! an error, never a kernel run on other bytes than the oracle's.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// A bit per 64-bit word of a tensor's bytes (the last word may be partial), set from any
/// thread: the special values are planted in parallel pieces of rows.
pub struct Written {
    bits: Vec<AtomicU64>,
    bytes: usize,
}

impl Written {
    /// None of `bytes` bytes written yet.
    pub fn new(bytes: usize) -> Written {
        let words = bytes.div_ceil(8);
        Written { bits: std::iter::repeat_with(|| AtomicU64::new(0)).take(words.div_ceil(64)).collect(), bytes }
    }

    /// Bytes `range` were (or may have been) written.
    pub fn mark(&self, range: Range<usize>) {
        assert!(range.end <= self.bytes, "bytes {range:?} of {}", self.bytes);
        if range.is_empty() {
            return;
        }
        let (first, last) = (range.start / 8, (range.end - 1) / 8);
        let (first_bit, last_bit) = (first / 64, last / 64);
        for bit_word in first_bit..=last_bit {
            let low = if bit_word == first_bit { first % 64 } else { 0 };
            let high = if bit_word == last_bit { last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - high)) & (u64::MAX << low);
            // most marks repeat one already made (a row's elements share words): a load first
            if self.bits[bit_word].load(Ordering::Relaxed) & mask != mask {
                self.bits[bit_word].fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// The written words in runs of `long` words or more (64 or more), in order, each as long
    /// as it goes: those `runs` gives that long, found in one pass over the bits without the
    /// list of every run (a run of 64 words or more crosses a bit word's edge or fills one).
    pub fn long_runs(&self, long: usize) -> Vec<Range<usize>> {
        assert!(long >= 64, "a long run of {long} words");
        let mut long_runs = Vec::new();
        // the first word of the run the bit words so far end in
        let mut open: Option<usize> = None;
        for (bit_word, bits) in self.bits.iter().enumerate() {
            let (bits, first) = (bits.load(Ordering::Relaxed), bit_word * 64);
            if bits == u64::MAX {
                open.get_or_insert(first);
                continue;
            }
            // a run begun before this bit word ends in its low bits; one inside it is short
            let ends = first + bits.trailing_ones() as usize;
            if let Some(start) = open.take()
                && ends - start >= long
            {
                long_runs.push(start..ends);
            }
            let starts = bits.leading_ones() as usize;
            if starts > 0 {
                open = Some(first + 64 - starts);
            }
        }
        // no bit past the last word is ever set: a run open here ends with the words
        if let Some(start) = open {
            let end = self.bytes.div_ceil(8);
            if end - start >= long {
                long_runs.push(start..end);
            }
        }
        long_runs
    }

    /// Whether word `word` was (or may have been) written.
    pub fn marked(&self, word: usize) -> bool {
        self.bits[word / 64].load(Ordering::Relaxed) & (1 << (word % 64)) != 0
    }

    /// The bit words (each of 64 words' bits).
    pub fn bit_words(&self) -> usize {
        self.bits.len()
    }

    /// The bits of bit word `bit_word` (words `64 * bit_word..` from its lowest bit) of the
    /// written words outside `long_runs` (sorted and apart, as `long_runs` gives them).
    pub fn bits_outside(&self, bit_word: usize, long_runs: &[Range<usize>]) -> u64 {
        let mut bits = self.bits[bit_word].load(Ordering::Relaxed);
        let (first, end) = (bit_word * 64, bit_word * 64 + 64);
        let from = long_runs.partition_point(|run| run.end <= first);
        for run in long_runs[from..].iter().take_while(|run| run.start < end) {
            let (low, high) = (run.start.max(first) - first, run.end.min(end) - first);
            bits &= !(u64::MAX >> (64 - (high - low)) << low);
        }
        bits
    }

    /// The written words as runs of word indices, in order, each as long as it goes: the tests'
    /// account of what was marked (a list of millions of runs where the marks are dense).
    #[cfg(test)]
    pub fn runs(&self) -> Vec<Range<usize>> {
        let words = self.bytes.div_ceil(8);
        let mut runs: Vec<Range<usize>> = Vec::new();
        for (bit_word, bits) in self.bits.iter().enumerate() {
            let mut bits = bits.load(Ordering::Relaxed);
            while bits != 0 {
                let start = bits.trailing_zeros() as usize;
                let len = (bits >> start).trailing_ones() as usize;
                let word = bit_word * 64 + start;
                match runs.last_mut() {
                    Some(run) if run.end == word => run.end = word + len,
                    _ => runs.push(word..word + len),
                }
                bits = if start + len >= 64 { 0 } else { bits & (u64::MAX << (start + len)) };
            }
        }
        debug_assert!(runs.last().is_none_or(|run| run.end <= words));
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The long runs are `runs`' runs of that length, and the bits outside them the words of
    /// the others, whatever the marks' places against the bit words' edges.
    #[test]
    fn the_long_runs_and_the_words_outside_them_are_those_of_the_runs() {
        let words = 64 * 1024 + 37;
        let written = Written::new(words * 8 - 3);
        assert!(written.long_runs(64).is_empty());
        for word in [0, 1, 63, 64, 100, 5000] {
            written.mark(word * 8..word * 8 + 1);
        }
        // long runs inside bit words' edges, on them, across several, of exactly `long` words,
        // and one to the partial last word
        for run in [200..460, 512..768, 1000..1255, 2048..4096 + 5, 9001..9257, words - 300..words] {
            written.mark(run.start * 8..(run.end * 8).min(words * 8 - 3));
        }
        assert!(written.marked(1) && written.marked(words - 1) && !written.marked(2));
        for long in [64, 255, 256, 257, 4096] {
            let runs = written.runs();
            let want_long: Vec<Range<usize>> = runs.iter().filter(|r| r.len() >= long).cloned().collect();
            assert_eq!(written.long_runs(long), want_long, "long {long}");
            let want_short: Vec<usize> = runs.iter().filter(|r| r.len() < long).flat_map(|r| r.clone()).collect();
            let short: Vec<usize> = (0..written.bit_words())
                .flat_map(|bit_word| {
                    let bits = written.bits_outside(bit_word, &want_long);
                    (0..64).filter(move |b| bits >> b & 1 == 1).map(move |b| bit_word * 64 + b)
                })
                .collect();
            assert_eq!(short, want_short, "long {long}");
        }
        // every word written: one run, from the first word to the last
        let full = Written::new(words * 8);
        full.mark(0..words * 8);
        assert_eq!(full.long_runs(64), vec![0..words]);
        assert_eq!((0..full.bit_words()).map(|w| full.bits_outside(w, &full.long_runs(64))).max(), Some(0));
    }

    #[test]
    fn marked_bytes_come_back_as_runs_of_whole_words() {
        let written = Written::new(1000);
        assert!(written.runs().is_empty());
        written.mark(3..4);
        written.mark(5..9);
        written.mark(500..500);
        assert_eq!(written.runs(), vec![0..2]);
        // a run across a word of bits, and the last word's partial bytes
        written.mark(60 * 8..70 * 8 + 1);
        written.mark(999..1000);
        assert_eq!(written.runs(), vec![0..2, 60..71, 124..125]);
        written.mark(0..1000);
        assert_eq!(written.runs(), vec![0..125]);
    }

    #[test]
    fn marks_from_many_threads_all_count() {
        let written = Written::new(64 * 1024 * 8);
        std::thread::scope(|scope| {
            for t in 0..4 {
                let written = &written;
                scope.spawn(move || (t..64 * 1024).step_by(8).for_each(|w| written.mark(w * 8..w * 8 + 1)));
            }
        });
        let runs = written.runs();
        let marked: usize = runs.iter().map(|r| r.len()).sum();
        assert_eq!(marked, 4 * 8 * 1024);
        assert!(runs.iter().all(|r| r.start % 8 < 4));
    }

    #[test]
    #[should_panic(expected = "bytes 8..17 of 16")]
    fn a_mark_past_the_end_is_a_bug() {
        Written::new(16).mark(8..17);
    }
}
