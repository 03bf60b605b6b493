//! Large host buffers (a GPU-only case's inputs of gigabytes, drawn on the host or read back
//! from the device): zeroed as `vec![0; n]` is, and backed by transparent huge pages where the
//! kernel offers them to a buffer that asks (its `madvise` mode, Debian's default). Such a
//! buffer is paid for at its first touch: faulting in 4 GiB took 1.1-1.4 s of 4 KiB pages on
//! 2 threads and 0.31 s of 2 MiB pages (a Linux 6.18 VM), where writing it again took 0.15 s.

/// Buffers of this many bytes or more ask for huge pages.
pub const ADVISED_BYTES: usize = 64 << 20;

/// `len` zero bytes, their pages not yet touched (the allocator's zeroed memory), asking for
/// huge pages from `ADVISED_BYTES` on.
pub fn zeroed(len: usize) -> Vec<u8> {
    let bytes = vec![0u8; len];
    if len >= ADVISED_BYTES {
        advise_huge_pages(&bytes);
    }
    bytes
}

/// Asks the kernel to back `bytes`' whole pages with huge pages as they are first touched. A
/// kernel without transparent huge pages refuses, and the buffer stays as it was: only its
/// speed depends on the answer, so the answer is not looked at.
fn advise_huge_pages(bytes: &[u8]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = (bytes.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (bytes.as_ptr() as usize + bytes.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies within `bytes`' own allocation, and MADV_HUGEPAGE changes
            // how its pages are backed, never what they hold
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice changes no byte: a large buffer reads as zeros, takes writes at both ends,
    /// and a small one (not advised) is as `vec!` makes it.
    #[test]
    fn a_large_buffer_is_zeroed_and_writable_and_a_small_one_plain() {
        let mut large = zeroed(ADVISED_BYTES + 4099);
        assert_eq!(large.len(), ADVISED_BYTES + 4099);
        assert!(large.iter().step_by(4093).all(|b| *b == 0) && large[large.len() - 1] == 0);
        let last = large.len() - 1;
        (large[0], large[last]) = (7, 9);
        assert_eq!((large[0], large[last]), (7, 9));
        assert_eq!(zeroed(3), vec![0u8; 3]);
        assert!(zeroed(0).is_empty());
    }

    /// Where the kernel offers huge pages to a buffer that asks (`[madvise]` or `[always]`), the
    /// mapping that holds a large buffer is eligible for them (`THPeligible: 1` in
    /// /proc/self/smaps); elsewhere there is nothing to see.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_large_buffers_mapping_is_eligible_for_huge_pages_where_the_kernel_offers_them() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !(mode.contains("[madvise]") || mode.contains("[always]")) {
            eprintln!("not run: transparent huge pages are `{}` here", mode.trim());
            return;
        }
        let buffer = zeroed(ADVISED_BYTES);
        let middle = buffer.as_ptr() as usize + buffer.len() / 2;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut eligible = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((start, end)) = range.split_once('-')
                && let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
            {
                inside = (start..end).contains(&middle);
            } else if inside && let Some(value) = line.strip_prefix("THPeligible:") {
                eligible = Some(value.trim().to_string());
            }
        }
        assert_eq!(eligible.as_deref(), Some("1"), "the mapping of a buffer of {} bytes", buffer.len());
    }
}
