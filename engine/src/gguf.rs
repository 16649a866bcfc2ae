//! Minimal GGUF (v2/v3) reader: header, metadata key/values and tensor infos.
//!
//! The whole file is read into memory once; tensors are exposed as byte slices
//! into that buffer so quantized weights are used as stored, without copies.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A GGUF metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Unsigned integer of any width.
    U64(u64),
    /// Signed integer of any width.
    I64(i64),
    /// Floating point of any width.
    F64(f64),
    /// Boolean.
    Bool(bool),
    /// UTF-8 string.
    Str(String),
    /// Homogeneous array.
    Array(Vec<Value>),
}

impl Value {
    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) => Some(v),
            Value::I64(v) if v >= 0 => Some(v as u64),
            _ => None,
        }
    }
    /// The value as a float, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::U64(v) => Some(v as f64),
            Value::I64(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => None,
        }
    }
    /// The value as a string slice.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The value as a bool.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
    /// The value as an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// GGML tensor element types this engine understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlType {
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// 4-bit, block 32, scale + min.
    Q4_1,
    /// 8-bit, block 32, scale.
    Q8_0,
    /// 4-bit, block 32, scale only.
    Q4_0,
    /// Any other type id (not supported for compute).
    Other(u32),
}

impl GgmlType {
    fn from_id(id: u32) -> Self {
        match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            8 => GgmlType::Q8_0,
            o => GgmlType::Other(o),
        }
    }
    /// (elements per block, bytes per block).
    pub fn block(&self) -> Option<(usize, usize)> {
        match self {
            GgmlType::F32 => Some((1, 4)),
            GgmlType::F16 => Some((1, 2)),
            GgmlType::Q4_0 => Some((32, 18)),
            GgmlType::Q4_1 => Some((32, 20)),
            GgmlType::Q8_0 => Some((32, 34)),
            GgmlType::Other(_) => None,
        }
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GgmlType::Other(id) => write!(f, "type{id}"),
            t => write!(f, "{t:?}"),
        }
    }
}

/// One tensor's description and location.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    /// Tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Dimensions, innermost first (ggml order).
    pub dims: Vec<usize>,
    /// Element type.
    pub ty: GgmlType,
    /// Absolute byte offset in the file.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A parsed GGUF file held in memory.
pub struct Gguf {
    /// Raw file bytes.
    pub data: Vec<u8>,
    /// Metadata key/values.
    pub meta: BTreeMap<String, Value>,
    /// Tensors by name.
    pub tensors: BTreeMap<String, TensorInfo>,
    /// GGUF format version.
    pub version: u32,
}

/// Error while reading a GGUF file.
#[derive(Debug)]
pub struct GgufError(pub String);

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gguf: {}", self.0)
    }
}
impl std::error::Error for GgufError {}

fn err<T>(msg: impl Into<String>) -> Result<T, GgufError> {
    Err(GgufError(msg.into()))
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], GgufError> {
        if self.pos.checked_add(n).is_none_or(|e| e > self.buf.len()) {
            return err("unexpected end of file");
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, GgufError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn string(&mut self) -> Result<String, GgufError> {
        let n = self.u64()? as usize;
        let b = self.take(n)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }
    fn value(&mut self, ty: u32, depth: usize) -> Result<Value, GgufError> {
        Ok(match ty {
            0 => Value::U64(self.u8()? as u64),
            1 => Value::I64(self.u8()? as i8 as i64),
            2 => Value::U64(u16::from_le_bytes([self.u8()?, self.u8()?]) as u64),
            3 => Value::I64(i16::from_le_bytes([self.u8()?, self.u8()?]) as i64),
            4 => Value::U64(self.u32()? as u64),
            5 => Value::I64(self.u32()? as i32 as i64),
            6 => Value::F64(f32::from_bits(self.u32()?) as f64),
            7 => Value::Bool(self.u8()? != 0),
            8 => Value::Str(self.string()?),
            9 => {
                if depth > 2 {
                    return err("nested arrays too deep");
                }
                let ety = self.u32()?;
                let n = self.u64()? as usize;
                if n > self.buf.len() {
                    return err("array length out of range");
                }
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.value(ety, depth + 1)?);
                }
                Value::Array(v)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(self.u64()? as i64),
            12 => Value::F64(f64::from_bits(self.u64()?)),
            t => return err(format!("unknown metadata type {t}")),
        })
    }
}

/// The `n_kv` metadata key/value pairs at the cursor.
fn read_meta(c: &mut Cursor, n_kv: usize) -> Result<BTreeMap<String, Value>, GgufError> {
    let mut meta = BTreeMap::new();
    for _ in 0..n_kv {
        let k = c.string()?;
        let ty = c.u32()?;
        let v = c.value(ty, 0)?;
        meta.insert(k, v);
    }
    Ok(meta)
}

/// A tensor as its info record gives it: name, dims, type, offset into the data section.
type RawTensorInfo = (String, Vec<usize>, GgmlType, usize);

/// The `n_tensors` tensor info records at the cursor.
fn read_tensor_infos(c: &mut Cursor, n_tensors: usize) -> Result<Vec<RawTensorInfo>, GgufError> {
    let mut infos = Vec::with_capacity(n_tensors.min(1 << 16));
    for _ in 0..n_tensors {
        let name = c.string()?;
        let nd = c.u32()? as usize;
        if nd > 4 {
            return err(format!("tensor {name}: {nd} dims"));
        }
        let mut dims = Vec::with_capacity(nd);
        for _ in 0..nd {
            dims.push(c.u64()? as usize);
        }
        let ty = GgmlType::from_id(c.u32()?);
        let off = c.u64()? as usize;
        infos.push((name, dims, ty, off));
    }
    Ok(infos)
}

/// The tensors by name, placed at `base` (the aligned start of the data section) plus their
/// offsets; a tensor of known type must end inside the file's `len` bytes.
fn place_tensors(
    infos: Vec<RawTensorInfo>,
    base: usize,
    len: usize,
) -> Result<BTreeMap<String, TensorInfo>, GgufError> {
    let mut tensors = BTreeMap::new();
    for (name, dims, ty, off) in infos {
        let n: usize = dims.iter().product();
        let size = match ty.block() {
            Some((be, bb)) => n / be * bb,
            None => 0,
        };
        let offset = base + off;
        if ty.block().is_some() && offset + size > len {
            return err(format!("tensor {name} out of file bounds"));
        }
        tensors.insert(
            name.clone(),
            TensorInfo {
                name,
                dims,
                ty,
                offset,
                size,
            },
        );
    }
    Ok(tensors)
}

impl Gguf {
    /// Read and parse a GGUF file.
    pub fn open(path: &Path) -> Result<Self, GgufError> {
        let data = std::fs::read(path)
            .map_err(|e| GgufError(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(data)
    }

    /// Parse GGUF bytes.
    pub fn parse(data: Vec<u8>) -> Result<Self, GgufError> {
        let mut c = Cursor { buf: &data, pos: 0 };
        if c.take(4)? != b"GGUF" {
            return err("not a GGUF file (bad magic)");
        }
        let version = c.u32()?;
        if !(2..=3).contains(&version) {
            return err(format!("unsupported GGUF version {version}"));
        }
        let n_tensors = c.u64()? as usize;
        let n_kv = c.u64()? as usize;
        let meta = read_meta(&mut c, n_kv)?;
        let align = meta
            .get("general.alignment")
            .and_then(Value::as_u64)
            .unwrap_or(32) as usize;
        let infos = read_tensor_infos(&mut c, n_tensors)?;
        let base = c.pos.div_ceil(align.max(1)) * align.max(1);
        let tensors = place_tensors(infos, base, data.len())?;
        Ok(Gguf {
            data,
            meta,
            tensors,
            version,
        })
    }

    /// Metadata value by key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.meta.get(key)
    }

    /// Unsigned metadata value by key.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    /// Float metadata value by key.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    /// String metadata value by key.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// Tensor info and bytes by name.
    pub fn tensor(&self, name: &str) -> Result<(&TensorInfo, &[u8]), GgufError> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| GgufError(format!("missing tensor {name}")))?;
        Ok((t, &self.data[t.offset..t.offset + t.size]))
    }
}
