//! How numbers read in reports: counts with thousands separators, values with four
//! significant digits, bits in hex at the element's width, coordinates as `[i, j]`.

use engine::DType;

/// `7168` -> `7,168`.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Four significant digits: `0.3184`, `-1.203`, `1024`, `1.500e16`, `NaN`, `-inf`.
pub fn value(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let magnitude = v.abs().log10().floor() as i32;
    if (-3..5).contains(&magnitude) {
        let decimals = (3 - magnitude).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3e}")
    }
}

/// `0x3ea3` for a bf16, `0x3fc00000` for an f32.
pub fn bits(dtype: DType, bits: u64) -> String {
    format!("0x{:0width$x}", bits, width = dtype.size() * 2)
}

/// A value with its bits: `0.3184 (0x3ea3)`.
pub fn value_and_bits(dtype: DType, v: f64, raw: u64) -> String {
    format!("{} ({})", value(v), bits(dtype, raw))
}

/// The coordinates of a linear element index in a row-major shape.
pub fn coordinates(shape: &[usize], mut index: usize) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for (axis, dim) in shape.iter().enumerate().rev() {
        if axis == 0 {
            out[0] = index;
        } else {
            out[axis] = index % dim;
            index /= dim;
        }
    }
    out
}

pub fn coordinates_text(shape: &[usize], index: usize) -> String {
    let c: Vec<String> = coordinates(shape, index).iter().map(|v| v.to_string()).collect();
    format!("[{}]", c.join(", "))
}

/// `1 element`, `2,048 elements`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{} {noun}s", count(n)) }
}

/// An f64 read back from JSON, where serde_json writes a NaN or an infinity as `null`.
pub fn number_or_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_the_seed_receipts() {
        assert_eq!(count(6912), "6,912");
        assert_eq!(count(7168), "7,168");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000_000), "1,000,000");
        assert_eq!(value(0.31835938), "0.3184");
        assert_eq!(value(-1.203125), "-1.203");
        assert_eq!(value(1024.0), "1024");
        assert_eq!(value(1.5e16), "1.500e16");
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(bits(DType::Bf16, 0x3ea3), "0x3ea3");
        assert_eq!(bits(DType::F32, 0x3fc0_0000), "0x3fc00000");
        assert_eq!(coordinates_text(&[7, 130], 131), "[1, 1]");
        assert_eq!(coordinates_text(&[7, 130], 910), "[7, 0]");
    }
}
