//! The host backend's BLAS: the BF16 projection as a real blocked GEMM (`matrixmultiply`'s
//! sgemm) on inputs upcast to f32. The upcast is exact, and so is every product of two bf16
//! values in f32 (8 + 8 significant bits), so the only roundings are the sgemm's f32 sums
//! and, for a bf16 `y`, the final store (to nearest even).
//!
//! A row's bits never depend on the row count: the sgemm blocks k by a fixed depth and splits
//! only m and n among its panels, so each element's sum runs in one order whatever m is (a
//! test below holds it to that). So a pinned call computes only the rows read back, not the
//! zero padding a library needs to be called with one row count.

use crate::backend::{GemmBf16, LaunchReport};
use crate::{DType, EngineError};

fn refuse(reason: String) -> EngineError {
    EngineError::Op { op: "gemm_bf16 (host)".into(), reason }
}

pub(super) fn gemm_bf16(r: &GemmBf16) -> Result<LaunchReport, EngineError> {
    if !matches!(r.y_dtype, DType::F32 | DType::Bf16) {
        return Err(refuse(format!("y must be f32 or bf16, not {}", r.y_dtype)));
    }
    let size =
        |a: usize, b: usize| a.checked_mul(b).filter(|e| e.checked_mul(4).is_some()).ok_or_else(|| refuse(format!("{a} x {b} overflows")));
    if r.rows > r.m {
        return Err(refuse(format!("{} rows read back of a call of {}", r.rows, r.m)));
    }
    // the rows read back alone: the rest is padding, and no row depends on the others
    let m = r.rows;
    let (xs, ws, ys) = (size(m, r.k)?, size(r.n, r.k)?, size(m, r.n)?);
    for (name, address) in [("x", r.x), ("w", r.w), ("y", r.y)] {
        if address == 0 || address % 2 != 0 || (name == "y" && r.y_dtype == DType::F32 && address % 4 != 0) {
            return Err(refuse(format!("`{name}` address {address:#x} is null or misaligned")));
        }
    }
    // SAFETY: on the host backend a device address is the address of host memory that the
    // caller's tensors own for the duration of the call, with at least the elements the
    // request names (the op launcher checks the tensors' shapes against m, n and k).
    let (x, w) = unsafe { (std::slice::from_raw_parts(r.x as *const u16, xs), std::slice::from_raw_parts(r.w as *const u16, ws)) };
    let upcast = |v: &[u16]| v.iter().map(|&b| half::bf16::from_bits(b).to_f32()).collect::<Vec<f32>>();
    let (a, b) = (upcast(x), upcast(w));
    let mut c = vec![0f32; ys];
    if ys > 0 {
        // C[m, n] = A[m, k] . B[k, n] with B[kk, j] = w[j, kk]: W^T read through strides
        // SAFETY: every pointer covers its matrix under the strides given.
        unsafe {
            matrixmultiply::sgemm(
                m,
                r.k,
                r.n,
                1.0,
                a.as_ptr(),
                r.k as isize,
                1,
                b.as_ptr(),
                1,
                r.k as isize,
                0.0,
                c.as_mut_ptr(),
                r.n as isize,
                1,
            );
        }
    }
    match r.y_dtype {
        // SAFETY: as above, `y` holds m * n elements of its dtype.
        DType::F32 => unsafe { std::slice::from_raw_parts_mut(r.y as *mut f32, ys).copy_from_slice(&c) },
        _ => {
            let y = unsafe { std::slice::from_raw_parts_mut(r.y as *mut u16, ys) };
            for (out, v) in y.iter_mut().zip(&c) {
                *out = half::bf16::from_f32(*v).to_bits();
            }
        }
    }
    Ok(LaunchReport { blocks: 1, ..LaunchReport::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, DeviceBuffer, KernelSource, Module};

    fn bf16(values: &[f32]) -> Vec<u16> {
        values.iter().map(|v| half::bf16::from_f32(*v).to_bits()).collect()
    }

    #[test]
    fn multiplies_by_the_transpose_and_rounds_a_bf16_y_to_nearest_even() {
        // x = [[1, 2, 3], [4, 5, 6]], w = [[1, 0, -1], [2, 1, 0]]: y = x . w^T by hand
        let (x, w) = (bf16(&[1., 2., 3., 4., 5., 6.]), bf16(&[1., 0., -1., 2., 1., 0.]));
        let mut y = [f32::NAN; 4];
        let r = GemmBf16 {
            m: 2,
            rows: 2,
            n: 2,
            k: 3,
            x: x.as_ptr() as u64,
            w: w.as_ptr() as u64,
            y: y.as_mut_ptr() as u64,
            y_dtype: DType::F32,
        };
        gemm_bf16(&r).unwrap();
        assert_eq!(y, [-2., 4., -2., 13.]);
        // 256 + 1 = 257 ties between bf16 256 and 258: even is 256; 258 + 1 = 259 ties to 260
        let (x, w) = (bf16(&[256., 1., 258., 1.]), bf16(&[1., 1.]));
        let mut y = [0xffffu16; 2];
        let r = GemmBf16 {
            m: 2,
            rows: 2,
            n: 1,
            k: 2,
            x: x.as_ptr() as u64,
            w: w.as_ptr() as u64,
            y: y.as_mut_ptr() as u64,
            y_dtype: DType::Bf16,
        };
        gemm_bf16(&r).unwrap();
        assert_eq!(y, [0x4380, 0x4382]);
        let r = GemmBf16 { y_dtype: DType::F16, ..r };
        assert!(gemm_bf16(&r).unwrap_err().to_string().contains("f32 or bf16"));
    }

    /// Deterministic bf16 values of both signs with all 8 significant bits in use, so that
    /// sums round and their order shows in the bits.
    fn rounding_values(count: usize, seed: u64) -> Vec<u16> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
                half::bf16::from_f32((unit - 0.5) * 7.3).to_bits()
            })
            .collect()
    }

    fn rows_of(x: &[u16], w: &[u16], (m, rows, n, k): (usize, usize, usize, usize)) -> Vec<f32> {
        let mut y = vec![f32::NAN; m * n];
        let r = GemmBf16 { m, rows, n, k, x: x.as_ptr() as u64, w: w.as_ptr() as u64, y: y.as_mut_ptr() as u64, y_dtype: DType::F32 };
        gemm_bf16(&r).unwrap();
        y
    }

    #[test]
    fn a_rows_bits_do_not_depend_on_the_row_count_so_a_pinned_call_computes_only_the_rows_read() {
        let (m, n, k) = (300, 70, 1000);
        let (x, w) = (rounding_values(m * k, 1), rounding_values(n * k, 2));
        let whole = rows_of(&x, &w, (m, m, n, k));
        for piece in [1, 7, 64, 299] {
            for start in [0, m - piece] {
                let alone = rows_of(&x[start * k..(start + piece) * k], &w, (piece, piece, n, k));
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&alone), bits(&whole[start * n..(start + piece) * n]), "rows {start}.. in pieces of {piece}");
            }
        }
        // a call of 1,024 rows reading back 3: those rows, the rest of y untouched
        let mut x_pinned = x[..3 * k].to_vec();
        x_pinned.resize(1024 * k, 0);
        let pinned = rows_of(&x_pinned, &w, (1024, 3, n, k));
        assert_eq!(
            pinned[..3 * n].iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
            whole[..3 * n].iter().map(|f| f.to_bits()).collect::<Vec<_>>()
        );
        assert!(pinned[3 * n..].iter().all(|v| v.is_nan()));
        let r = GemmBf16 { m: 2, rows: 3, n, k, x: x.as_ptr() as u64, w: w.as_ptr() as u64, y: 0x100, y_dtype: DType::F32 };
        assert!(gemm_bf16(&r).unwrap_err().to_string().contains("3 rows read back of a call of 2"));
    }

    struct NoBlas;

    impl Backend for NoBlas {
        fn name(&self) -> &'static str {
            "noblas"
        }
        fn arch(&self) -> String {
            String::new()
        }
        fn toolchain(&self) -> String {
            String::new()
        }
        fn device_memory(&self) -> Option<u64> {
            None
        }
        fn allocate(&self, _: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
        fn load_module(&self, _: &KernelSource) -> Result<std::sync::Arc<dyn Module>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
    }

    #[test]
    fn a_backend_without_blas_says_so_by_name() {
        let r = GemmBf16 { m: 1, rows: 1, n: 1, k: 1, x: 0, w: 0, y: 0, y_dtype: DType::F32 };
        let e = NoBlas.gemm_bf16(&r).unwrap_err().to_string();
        assert!(e.contains("noblas backend has no BF16 GEMM"), "{e}");
    }
}
