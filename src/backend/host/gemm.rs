//! The host backend's BLAS: the BF16 projection as a real blocked GEMM (`matrixmultiply`'s
//! sgemm) on inputs upcast to f32. The upcast is exact, and so is every product of two bf16
//! values in f32 (8 + 8 significant bits), so the only roundings are the sgemm's f32 sums
//! and, for a bf16 `y`, the final store (to nearest even).

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
    let (xs, ws, ys) = (size(r.m, r.k)?, size(r.n, r.k)?, size(r.m, r.n)?);
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
                r.m,
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
        let r = GemmBf16 { m: 2, n: 2, k: 3, x: x.as_ptr() as u64, w: w.as_ptr() as u64, y: y.as_mut_ptr() as u64, y_dtype: DType::F32 };
        gemm_bf16(&r).unwrap();
        assert_eq!(y, [-2., 4., -2., 13.]);
        // 256 + 1 = 257 ties between bf16 256 and 258: even is 256; 258 + 1 = 259 ties to 260
        let (x, w) = (bf16(&[256., 1., 258., 1.]), bf16(&[1., 1.]));
        let mut y = [0xffffu16; 2];
        let r = GemmBf16 { m: 2, n: 1, k: 2, x: x.as_ptr() as u64, w: w.as_ptr() as u64, y: y.as_mut_ptr() as u64, y_dtype: DType::Bf16 };
        gemm_bf16(&r).unwrap();
        assert_eq!(y, [0x4380, 0x4382]);
        let r = GemmBf16 { y_dtype: DType::F16, ..r };
        assert!(gemm_bf16(&r).unwrap_err().to_string().contains("f32 or bf16"));
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
        fn allocate(&self, _: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
        fn load_module(&self, _: &KernelSource) -> Result<std::sync::Arc<dyn Module>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
    }

    #[test]
    fn a_backend_without_blas_says_so_by_name() {
        let r = GemmBf16 { m: 1, n: 1, k: 1, x: 0, w: 0, y: 0, y_dtype: DType::F32 };
        let e = NoBlas.gemm_bf16(&r).unwrap_err().to_string();
        assert!(e.contains("noblas backend has no BF16 GEMM"), "{e}");
    }
}
