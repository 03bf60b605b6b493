//! A small, bounded MessagePack reader for the `NT_AMDGPU_METADATA` note.
//!
//! Written here rather than taken from a crate because the input is untrusted bytes from a
//! file and the subset is small: every length is checked against the bytes that remain
//! before anything is allocated (so a declared length of 4 GiB in a 2 KiB note is an error,
//! not an allocation), nesting is limited to [`MAX_DEPTH`], and every failure is an error
//! with the byte offset, never a panic.

/// Deeper than any metadata note nests (it uses 4 levels: map, kernels, kernel, args).
pub const MAX_DEPTH: usize = 32;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// Every integer that fits an i64 (negative fixints, int 8..64, and uint 8..64 below 2^63).
    Int(i64),
    /// Unsigned integers of 2^63 and above.
    UInt(u64),
    F32(f32),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    /// Pairs in file order (keys are strings in the metadata, but any value is allowed).
    Map(Vec<(Value, Value)>),
    Ext(i8, Vec<u8>),
}

impl Value {
    /// A non-negative integer as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(v) => u64::try_from(v).ok(),
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The value of a string key in a map (the first, if a key repeats).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A short name of the type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::UInt(_) => "integer",
            Value::F32(_) | Value::F64(_) => "float",
            Value::Str(_) => "string",
            Value::Bin(_) => "binary",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
            Value::Ext(..) => "extension",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the input where decoding failed.
    pub offset: usize,
    pub reason: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.reason)
    }
}

/// Decodes exactly one value that spans the whole input (trailing bytes are an error).
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0)?;
    if reader.at != bytes.len() {
        return Err(reader.error(format!("{} trailing bytes after the value", bytes.len() - reader.at)));
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, reason: impl Into<String>) -> DecodeError {
        DecodeError { offset: self.at, reason: reason.into() }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let remaining = self.bytes.len() - self.at;
        if n > remaining {
            return Err(self.error(format!("needs {n} bytes, {remaining} left")));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A length of items each at least `min_item_bytes` long, checked against what remains.
    fn length(&mut self, len: usize, min_item_bytes: usize) -> Result<usize, DecodeError> {
        let remaining = self.bytes.len() - self.at;
        if len.saturating_mul(min_item_bytes) > remaining {
            return Err(self.error(format!("declares {len} items but only {remaining} bytes are left")));
        }
        Ok(len)
    }

    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let start = self.at;
        let marker = self.byte()?;
        Ok(match marker {
            0x00..=0x7f => Value::Int(i64::from(marker)),
            0x80..=0x8f => self.map(usize::from(marker & 0x0f), depth)?,
            0x90..=0x9f => self.array(usize::from(marker & 0x0f), depth)?,
            0xa0..=0xbf => self.str(usize::from(marker & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 => {
                let n = usize::from(self.byte()?);
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc5 => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc6 => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7 => {
                let n = usize::from(self.byte()?);
                self.ext(n)?
            }
            0xc8 => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                self.ext(n)?
            }
            0xc9 => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                self.ext(n)?
            }
            0xca => Value::F32(f32::from_be_bytes(self.be()?)),
            0xcb => Value::F64(f64::from_be_bytes(self.be()?)),
            0xcc => Value::Int(i64::from(self.byte()?)),
            0xcd => Value::Int(i64::from(u16::from_be_bytes(self.be()?))),
            0xce => Value::Int(i64::from(u32::from_be_bytes(self.be()?))),
            0xcf => {
                let v = u64::from_be_bytes(self.be()?);
                i64::try_from(v).map(Value::Int).unwrap_or(Value::UInt(v))
            }
            0xd0 => Value::Int(i64::from(i8::from_be_bytes(self.be()?))),
            0xd1 => Value::Int(i64::from(i16::from_be_bytes(self.be()?))),
            0xd2 => Value::Int(i64::from(i32::from_be_bytes(self.be()?))),
            0xd3 => Value::Int(i64::from_be_bytes(self.be()?)),
            0xd4 => self.ext(1)?,
            0xd5 => self.ext(2)?,
            0xd6 => self.ext(4)?,
            0xd7 => self.ext(8)?,
            0xd8 => self.ext(16)?,
            0xd9 => {
                let n = usize::from(self.byte()?);
                self.str(n)?
            }
            0xda => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                self.str(n)?
            }
            0xdb => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                self.str(n)?
            }
            0xdc => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                self.array(n, depth)?
            }
            0xdd => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                self.array(n, depth)?
            }
            0xde => {
                let n = usize::from(u16::from_be_bytes(self.be()?));
                self.map(n, depth)?
            }
            0xdf => {
                let n = u32::from_be_bytes(self.be()?) as usize;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(i64::from(marker as i8)),
            0xc1 => return Err(DecodeError { offset: start, reason: "marker 0xc1 is never used".into() }),
        })
    }

    fn str(&mut self, n: usize) -> Result<Value, DecodeError> {
        let at = self.at;
        let bytes = self.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Value::Str(s.to_string())),
            Err(e) => Err(DecodeError { offset: at, reason: format!("string is not UTF-8: {e}") }),
        }
    }

    fn ext(&mut self, n: usize) -> Result<Value, DecodeError> {
        let tag = i8::from_be_bytes(self.be()?);
        Ok(Value::Ext(tag, self.take(n)?.to_vec()))
    }

    fn nest(&self, depth: usize) -> Result<usize, DecodeError> {
        if depth + 1 >= MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(depth + 1)
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let depth = self.nest(depth)?;
        let n = self.length(n, 1)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let depth = self.nest(depth)?;
        let n = self.length(n, 2)?;
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            let key = self.value(depth)?;
            let value = self.value(depth)?;
            pairs.push((key, value));
        }
        Ok(Value::Map(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_metadata_subset() {
        // {"a": [1, -1, 300, true, "x"], "b": nil}
        let bytes = [0x82, 0xa1, b'a', 0x95, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xc3, 0xa1, b'x', 0xa1, b'b', 0xc0];
        let value = decode(&bytes).unwrap();
        let a = value.get("a").unwrap().as_array().unwrap();
        assert_eq!(a, &[Value::Int(1), Value::Int(-1), Value::Int(300), Value::Bool(true), Value::Str("x".into())]);
        assert_eq!(value.get("b"), Some(&Value::Nil));
        assert_eq!(a[2].as_u64(), Some(300));
        assert_eq!(a[1].as_u64(), None);
    }

    #[test]
    fn wide_integers_and_floats() {
        let mut bytes = vec![0x94, 0xcf];
        bytes.extend_from_slice(&u64::MAX.to_be_bytes());
        bytes.push(0xd3);
        bytes.extend_from_slice(&(-5i64).to_be_bytes());
        bytes.push(0xcb);
        bytes.extend_from_slice(&1.5f64.to_be_bytes());
        bytes.extend_from_slice(&[0xd0, 0x80]);
        let value = decode(&bytes).unwrap();
        assert_eq!(value, Value::Array(vec![Value::UInt(u64::MAX), Value::Int(-5), Value::F64(1.5), Value::Int(-128)]));
    }

    #[test]
    fn huge_declared_lengths_are_errors_not_allocations() {
        for bytes in [
            &[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01][..],
            &[0xdf, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01],
            &[0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
            &[0xc6, 0xff, 0xff, 0xff, 0xff],
            &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01],
        ] {
            let error = decode(bytes).unwrap_err();
            assert!(error.reason.contains("left"), "{error}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let bytes = vec![0x91u8; 100_000];
        let error = decode(&bytes).unwrap_err();
        assert!(error.reason.contains("nested deeper"), "{error}");
    }

    #[test]
    fn truncation_trailing_bytes_and_bad_markers() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[0x82, 0xa1, b'a']).is_err());
        assert!(decode(&[0xcd, 0x01]).is_err());
        assert!(decode(&[0x01, 0x02]).unwrap_err().reason.contains("trailing"));
        assert_eq!(decode(&[0xc1]).unwrap_err().offset, 0);
        assert!(decode(&[0xa2, 0xff, 0xfe]).unwrap_err().reason.contains("UTF-8"));
    }

    #[test]
    fn every_prefix_and_every_byte_flip_of_a_value_is_handled() {
        let bytes = [0x82, 0xa1, b'a', 0x95, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xc3, 0xa1, b'x', 0xa1, b'b', 0xc0];
        for end in 0..bytes.len() {
            assert!(decode(&bytes[..end]).is_err());
        }
        for i in 0..bytes.len() {
            for b in 0..=255u8 {
                let mut copy = bytes;
                copy[i] = b;
                let _ = decode(&copy);
            }
        }
    }
}
