//! The HIP header shims (kernels/hip-headers) on the host backend: every conversion rounds to
//! nearest even as the `half` crate does, f16 arithmetic is rounded once per operation, the
//! packed dot product is ockl's software definition, a template kernel is named by its
//! instantiation, and `__shared__ alignas(..)` compiles.

use std::path::PathBuf;

use half::{bf16, f16};

use super::{HostBackend, HostOptions};
use crate::DType;
use crate::backend::{Backend, KernelArg, KernelSource, LaunchDims, Module, Schedule};
use crate::tensor::Tensor;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn module(kernels: &[&str]) -> (HostBackend, std::sync::Arc<dyn Module>) {
    let backend = HostBackend::new(HostOptions {
        prelude: root().join("kernels/host/prelude.h"),
        cache_dir: root().join("target/kernel-cache"),
        workers: 2,
        warp_size: 32,
    })
    .expect("host backend");
    let display_path = "src/backend/host/test_kernels/hip_headers.hip".to_string();
    let source = KernelSource {
        path: root().join(&display_path),
        display_path,
        kernels: kernels.iter().map(|k| k.to_string()).collect(),
        include_dirs: vec![root().join("kernels/hip-headers")],
    };
    let module = backend.load_module(&source).unwrap_or_else(|e| panic!("{e}"));
    (backend, module)
}

fn tensor(backend: &dyn Backend, dtype: DType, bytes: &[u8]) -> Tensor {
    let mut t = Tensor::allocate(backend, dtype, &[bytes.len() / dtype.size()]).unwrap();
    t.write(bytes).unwrap();
    t
}

fn u16s(t: &Tensor) -> Vec<u16> {
    t.read().unwrap().chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

fn ptr(t: &Tensor) -> KernelArg {
    KernelArg::Pointer(t.device_address())
}

fn launch(m: &dyn Module, kernel: &str, n: usize, args: &[KernelArg]) {
    let dims = LaunchDims { grid: [n.div_ceil(64) as u32, 1, 1], block: [64, 1, 1], dynamic_shared: 0 };
    m.launch(kernel, dims, Schedule::default(), args).unwrap_or_else(|e| panic!("{kernel}: {e}"));
}

/// f32 values at every rounding edge of f16 and bf16 (ties, subnormals, overflow), then a
/// seeded spread of bit patterns.
fn values() -> Vec<f32> {
    let mut v = vec![0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, -65520.0, 6.0e-8, 2.9e-8, 3.0e-8, f32::MAX, f32::MIN_POSITIVE, 1.0e-45];
    for h in [0x3c00u16, 0x0001, 0x03ff, 0x7bff] {
        let x = f16::from_bits(h).to_f32();
        let ulp = f16::from_bits(h + 1).to_f32() - x;
        v.extend([x + ulp / 2.0, x + ulp / 4.0, -(x + ulp / 2.0)]);
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bits = (state >> 32) as u32;
        let value = f32::from_bits(bits);
        if value.is_finite() {
            v.push(value);
        }
    }
    v
}

#[test]
fn conversions_round_to_nearest_even_as_the_half_crate_does() {
    let (backend, m) = module(&["conversions"]);
    let x = values();
    let n = x.len();
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let input = tensor(&backend, DType::F32, &bytes);
    let outs: Vec<Tensor> = (0..4).map(|_| tensor(&backend, DType::F16, &vec![0u8; n * 2])).collect();
    launch(&*m, "conversions", n, &[ptr(&input), KernelArg::I32(n as i32), ptr(&outs[0]), ptr(&outs[1]), ptr(&outs[2]), ptr(&outs[3])]);
    let [f16s, rz, bf16s, hip_bf16s] = [0, 1, 2, 3].map(|i| u16s(&outs[i]));
    for (i, &value) in x.iter().enumerate() {
        assert_eq!(f16s[i], f16::from_f32(value).to_bits(), "__float2half({value:e})");
        assert_eq!(bf16s[i], bf16::from_f32(value).to_bits(), "hip_bfloat16({value:e})");
        assert_eq!(hip_bf16s[i], bf16::from_f32(value).to_bits(), "__float2bfloat16({value:e})");
        // toward zero: never larger in magnitude than the value, and the nearest such f16
        let truncated = f16::from_bits(rz[i]).to_f64();
        assert!(truncated.abs() <= (value as f64).abs(), "__float2half_rz({value:e}) = {truncated:e}");
        let next = f16::from_bits(rz[i] + 1).to_f64();
        assert!(rz[i] & 0x7fff >= 0x7bff || next.abs() > (value as f64).abs(), "__float2half_rz({value:e}) = {truncated:e}");
    }
}

/// The f16 nearest to `v` (ties to even), in one rounding: `half`'s own conversion from f64
/// goes through f32 rounding to nearest, which rounds twice (-8219.9995 becomes -8220, a tie,
/// then -8224, where one rounding gives -8216). Rounding to odd in f32 first keeps the one.
fn nearest_f16(v: f64) -> f16 {
    let f = v as f32;
    if v.is_nan() || f as f64 == v || f.to_bits() & 1 == 1 {
        return f16::from_f32(f);
    }
    let larger = v.abs() > (f as f64).abs();
    f16::from_f32(f32::from_bits(if larger { f.to_bits() + 1 } else { f.to_bits() - 1 }))
}

#[test]
fn half_arithmetic_rounds_once_and_the_packed_dot_product_is_ockls_software_definition() {
    let (backend, m) = module(&["half_ops"]);
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // finite f16 values of every exponent
        let bits = ((state >> 40) as u16) & 0x7fff;
        let bits = if bits >= 0x7c00 { bits - 0x7c00 } else { bits };
        bits | (((state >> 20) as u16) & 0x8000)
    };
    let n = 8192;
    let (a, b, c): (Vec<u16>, Vec<u16>, Vec<u16>) =
        (0..n).map(|_| (next(), next(), next())).fold((Vec::new(), Vec::new(), Vec::new()), |(mut a, mut b, mut c), (x, y, z)| {
            a.push(x);
            b.push(y);
            c.push(z);
            (a, b, c)
        });
    let bytes = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (ta, tb, tc) =
        (tensor(&backend, DType::F16, &bytes(&a)), tensor(&backend, DType::F16, &bytes(&b)), tensor(&backend, DType::F16, &bytes(&c)));
    let out = tensor(&backend, DType::F16, &vec![0u8; n * 10]);
    let dot = tensor(&backend, DType::F32, &vec![0u8; n * 4]);
    launch(&*m, "half_ops", n, &[ptr(&ta), ptr(&tb), ptr(&tc), KernelArg::I32(n as i32), ptr(&out), ptr(&dot)]);
    let out = u16s(&out);
    let dots: Vec<f32> = dot.read().unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let same = |got: u16, want: f16| got == want.to_bits() || (f16::from_bits(got).is_nan() && want.is_nan());
    for i in 0..n {
        let (x, y, z) = (f16::from_bits(a[i]).to_f64(), f16::from_bits(b[i]).to_f64(), f16::from_bits(c[i]).to_f64());
        let want = [x + y, x - y, x * y, x / y, x.mul_add(y, z)].map(nearest_f16);
        for (k, w) in want.iter().enumerate() {
            assert!(same(out[5 * i + k], *w), "op {k} of ({x:e}, {y:e}, {z:e}): got {:#06x} want {:#06x}", out[5 * i + k], w.to_bits());
        }
        let (xf, yf, zf) = (x as f32, y as f32, z as f32);
        // a = (x, z), b = (y, x), c = z: fma(a.y, b.y, fma(a.x, b.x, c))
        let want_dot = zf.mul_add(xf, xf.mul_add(yf, zf));
        assert!(dots[i].to_bits() == want_dot.to_bits() || (dots[i].is_nan() && want_dot.is_nan()), "fdot2 {i}: {} vs {want_dot}", dots[i]);
    }
}

#[test]
fn a_template_kernel_is_named_by_its_instantiation_and_shared_alignas_compiles() {
    let (backend, m) = module(&["scale<float, 4>", "scale<__half, 2>"]);
    let n = 100;
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 50.5).collect();
    let input = tensor(&backend, DType::F32, &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    let output = tensor(&backend, DType::F32, &vec![0u8; n * 4]);
    launch(&*m, "scale<float, 4>", n, &[ptr(&input), ptr(&output), KernelArg::I32(n as i32)]);
    let got: Vec<f32> = output.read().unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(got, x.iter().map(|v| v * 4.0).collect::<Vec<f32>>());
    let halves: Vec<u8> = x.iter().flat_map(|v| f16::from_f32(*v).to_bits().to_le_bytes()).collect();
    let (input, output) = (tensor(&backend, DType::F16, &halves), tensor(&backend, DType::F16, &vec![0u8; n * 2]));
    launch(&*m, "scale<__half, 2>", n, &[ptr(&input), ptr(&output), KernelArg::I32(n as i32)]);
    let want: Vec<u16> = x.iter().map(|v| f16::from_f32(f16::from_f32(*v).to_f32() * 2.0).to_bits()).collect();
    assert_eq!(u16s(&output), want);
}
