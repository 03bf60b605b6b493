//! Resource usage of AMDGPU kernels, read from a code object's `NT_AMDGPU_METADATA` note.
//!
//! A code object (an ELF shared object, `EM_AMDGPU`) carries one note with name `"AMDGPU"`
//! and type 32 whose descriptor is a MessagePack map: `amdhsa.target`
//! (`amdgcn-amd-amdhsa--gfx1201`), `amdhsa.version` and `amdhsa.kernels`, one map per kernel
//! with `.name`, `.vgpr_count`, `.sgpr_count`, `.group_segment_fixed_size` (static LDS),
//! `.private_segment_fixed_size` (scratch per lane), spill counts, `.max_flat_workgroup_size`
//! and `.wavefront_size`. `hipFuncGetAttribute` is a view of the same note (ROCm/clr's
//! hip_module.cpp: MAX_THREADS_PER_BLOCK is `.max_flat_workgroup_size`, SHARED_SIZE_BYTES
//! `.group_segment_fixed_size`, LOCAL_SIZE_BYTES `.private_segment_fixed_size`, NUM_REGS
//! `.vgpr_count`; SGPRs are not exposed), so these figures need no GPU.
//!
//! Nothing here panics on malformed input: the ELF is read with `object` (bounds-checked),
//! the note with the bounded reader in [`super::msgpack`].

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};

use super::msgpack::{self, Value};

/// The note type of the metadata note (`NT_AMDGPU_METADATA`).
pub const NT_AMDGPU_METADATA: u32 = 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetadataError {
    #[error("{file}: not an ELF code object: {reason}")]
    NotElf { file: String, reason: String },

    #[error("{file}: ELF machine {machine} is not EM_AMDGPU (224)")]
    NotAmdgpu { file: String, machine: u16 },

    #[error("{file}: malformed ELF {what}: {reason}")]
    BadElf { file: String, what: &'static str, reason: String },

    #[error("{file}: no NT_AMDGPU_METADATA note (name \"AMDGPU\", type 32) in the code object")]
    NoMetadataNote { file: String },

    #[error("{file}: NT_AMDGPU_METADATA is not valid MessagePack ({error})")]
    Msgpack { file: String, error: String },

    #[error("{file}: NT_AMDGPU_METADATA has no `{key}`{context}")]
    MissingKey { file: String, key: String, context: String },

    #[error("{file}: NT_AMDGPU_METADATA `{key}`{context} {reason}")]
    BadValue { file: String, key: String, context: String, reason: String },

    #[error("{file}: no kernel `{kernel}` in the code object (it has: {available})")]
    NoKernel { file: String, kernel: String, available: String },
}

/// What the note says about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `.name`: the kernel's source name (the `extern "C"` symbol).
    pub name: String,
    /// `.symbol`: the kernel descriptor's symbol (`name.kd`).
    pub symbol: String,
    pub vgpr_count: u32,
    pub sgpr_count: u32,
    /// `.agpr_count` (gfx90a/gfx94x; 0 or absent elsewhere).
    pub agpr_count: Option<u32>,
    /// Static LDS bytes (`extern __shared__` arrays are not counted).
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    pub vgpr_spill_count: u32,
    pub sgpr_spill_count: u32,
    /// 1024 unless `__launch_bounds__` says less.
    pub max_flat_workgroup_size: u32,
    pub wavefront_size: u32,
    pub kernarg_segment_size: Option<u32>,
    /// A dynamically sized stack: scratch is then unbounded, whatever the fixed size says.
    pub uses_dynamic_stack: Option<bool>,
    /// The bytes of each argument the source declares, in order (`.args` less the hidden
    /// arguments the compiler appends, whose `.value_kind` starts with `hidden_`); `None`
    /// when the note has no `.args`.
    pub explicit_arg_sizes: Option<Vec<u32>>,
}

/// The whole note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObjectMetadata {
    /// `amdhsa.target`, for example `amdgcn-amd-amdhsa--gfx1201`.
    pub target: String,
    /// `amdhsa.version` ([1, 2] for code object v5 and v6).
    pub version: Vec<u64>,
    pub kernels: Vec<KernelMetadata>,
}

impl CodeObjectMetadata {
    /// The processor of `amdhsa.target` without target features: `gfx1201`.
    pub fn arch(&self) -> &str {
        target_arch(&self.target)
    }

    pub fn kernel(&self, name: &str) -> Option<&KernelMetadata> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// `amdgcn-amd-amdhsa--gfx1201:xnack-` -> `gfx1201`.
pub fn target_arch(target: &str) -> &str {
    let processor = target.rsplit_once("--").map_or(target, |(_, p)| p);
    processor.split(':').next().unwrap_or(processor)
}

/// Resource usage of one kernel: the figures a limits gate holds (plain data; the harness
/// maps it to its own report types).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceUsage {
    pub kernel: String,
    /// The processor, for example `gfx1201`.
    pub arch: String,
    pub vgprs: u32,
    pub sgprs: u32,
    /// Static LDS bytes.
    pub lds_bytes: u32,
    /// Scratch bytes per work-item.
    pub scratch_bytes: u32,
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    /// `.max_flat_workgroup_size`: what the code object allows, not the launcher's block.
    pub max_threads: u32,
    pub wave_size: u32,
    pub dynamic_stack: bool,
}

impl ResourceUsage {
    pub fn from_kernel(kernel: &KernelMetadata, arch: &str) -> ResourceUsage {
        ResourceUsage {
            kernel: kernel.name.clone(),
            arch: arch.to_string(),
            vgprs: kernel.vgpr_count,
            sgprs: kernel.sgpr_count,
            lds_bytes: kernel.group_segment_fixed_size,
            scratch_bytes: kernel.private_segment_fixed_size,
            vgpr_spills: kernel.vgpr_spill_count,
            sgpr_spills: kernel.sgpr_spill_count,
            max_threads: kernel.max_flat_workgroup_size,
            wave_size: kernel.wavefront_size,
            dynamic_stack: kernel.uses_dynamic_stack.unwrap_or(false),
        }
    }
}

/// Resource usage of `kernel` in a code object. `file` names the code object in errors.
pub fn resource_usage(code_object: &[u8], file: &str, kernel: &str) -> Result<ResourceUsage, MetadataError> {
    let metadata = read_metadata(code_object, file)?;
    let found = metadata.kernel(kernel).ok_or_else(|| MetadataError::NoKernel {
        file: file.to_string(),
        kernel: kernel.to_string(),
        available: metadata.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", "),
    })?;
    Ok(ResourceUsage::from_kernel(found, metadata.arch()))
}

/// Reads and decodes the metadata note of a code object.
pub fn read_metadata(code_object: &[u8], file: &str) -> Result<CodeObjectMetadata, MetadataError> {
    let descriptor = metadata_note(code_object, file)?;
    let value = msgpack::decode(&descriptor).map_err(|e| MetadataError::Msgpack { file: file.to_string(), error: e.to_string() })?;
    decode_metadata(&value, file)
}

/// The descriptor bytes of the `NT_AMDGPU_METADATA` note. Section headers are searched
/// first (SHT_NOTE), then program headers (PT_NOTE), so a stripped object still works.
pub fn metadata_note(code_object: &[u8], file: &str) -> Result<Vec<u8>, MetadataError> {
    // `object` reads headers in place and wants them aligned; a file read into a Vec is,
    // but a sub-slice may not be.
    if code_object.as_ptr().align_offset(8) != 0 {
        let mut copy = vec![0u64; code_object.len().div_ceil(8)];
        // SAFETY: `copy` has at least `code_object.len()` initialised bytes, and u8 has no
        // alignment or validity requirement.
        let bytes = unsafe { std::slice::from_raw_parts_mut(copy.as_mut_ptr().cast::<u8>(), code_object.len()) };
        bytes.copy_from_slice(code_object);
        return metadata_note(bytes, file);
    }
    let bad = |what: &'static str| move |e: object::Error| MetadataError::BadElf { file: file.to_string(), what, reason: e.to_string() };

    if code_object.get(4) != Some(&elf::ELFCLASS64.0) {
        let reason = match code_object.get(..4) {
            Some(magic) if magic == elf::ELFMAG => "not a 64-bit ELF".to_string(),
            _ => "no ELF magic".to_string(),
        };
        return Err(MetadataError::NotElf { file: file.to_string(), reason });
    }
    let header = elf::FileHeader64::<object::Endianness>::parse(code_object)
        .map_err(|e| MetadataError::NotElf { file: file.to_string(), reason: e.to_string() })?;
    let endian = header.endian().map_err(|e| MetadataError::NotElf { file: file.to_string(), reason: e.to_string() })?;
    let machine = header.e_machine(endian);
    if machine != elf::EM_AMDGPU {
        return Err(MetadataError::NotAmdgpu { file: file.to_string(), machine: machine.0 });
    }

    let sections = header.sections(endian, code_object).map_err(bad("section table"))?;
    for section in sections.iter() {
        if let Some(mut notes) = section.notes(endian, code_object).map_err(bad("note section"))? {
            while let Some(note) = notes.next().map_err(bad("note"))? {
                if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                    return Ok(note.desc().to_vec());
                }
            }
        }
    }
    for segment in header.program_headers(endian, code_object).map_err(bad("program headers"))? {
        if let Some(mut notes) = segment.notes(endian, code_object).map_err(bad("note segment"))? {
            while let Some(note) = notes.next().map_err(bad("note"))? {
                if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                    return Ok(note.desc().to_vec());
                }
            }
        }
    }
    Err(MetadataError::NoMetadataNote { file: file.to_string() })
}

/// Maps the decoded note to [`CodeObjectMetadata`]; every missing or mistyped key is an error
/// that names the key (and the kernel).
pub fn decode_metadata(value: &Value, file: &str) -> Result<CodeObjectMetadata, MetadataError> {
    let fields = Fields { file, context: String::new() };
    if !matches!(value, Value::Map(_)) {
        return Err(fields.bad("(the note)", format!("is a {}, not a map", value.kind())));
    }
    let target = fields.str(value, "amdhsa.target")?;
    let version = match value.get("amdhsa.version") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .ok_or_else(|| fields.bad("amdhsa.version", format!("is a {}, not an array", v.kind())))?
            .iter()
            .map(|x| x.as_u64().ok_or_else(|| fields.bad("amdhsa.version", "has a non-integer entry")))
            .collect::<Result<_, _>>()?,
    };
    let kernels_value = fields.get(value, "amdhsa.kernels")?;
    let kernel_values =
        kernels_value.as_array().ok_or_else(|| fields.bad("amdhsa.kernels", format!("is a {}, not an array", kernels_value.kind())))?;

    let mut kernels = Vec::with_capacity(kernel_values.len());
    for (index, kernel) in kernel_values.iter().enumerate() {
        let mut fields = Fields { file, context: format!(" of amdhsa.kernels[{index}]") };
        if !matches!(kernel, Value::Map(_)) {
            return Err(fields.bad("(the kernel)", format!("is a {}, not a map", kernel.kind())));
        }
        let name = fields.str(kernel, ".name")?;
        fields.context = format!(" of kernel `{name}`");
        kernels.push(KernelMetadata {
            symbol: fields.str(kernel, ".symbol")?,
            vgpr_count: fields.u32(kernel, ".vgpr_count")?,
            sgpr_count: fields.u32(kernel, ".sgpr_count")?,
            agpr_count: fields.optional_u32(kernel, ".agpr_count")?,
            group_segment_fixed_size: fields.u32(kernel, ".group_segment_fixed_size")?,
            private_segment_fixed_size: fields.u32(kernel, ".private_segment_fixed_size")?,
            vgpr_spill_count: fields.u32(kernel, ".vgpr_spill_count")?,
            sgpr_spill_count: fields.u32(kernel, ".sgpr_spill_count")?,
            max_flat_workgroup_size: fields.u32(kernel, ".max_flat_workgroup_size")?,
            wavefront_size: fields.u32(kernel, ".wavefront_size")?,
            kernarg_segment_size: fields.optional_u32(kernel, ".kernarg_segment_size")?,
            uses_dynamic_stack: match kernel.get(".uses_dynamic_stack") {
                None => None,
                Some(v) => Some(v.as_bool().ok_or_else(|| fields.bad(".uses_dynamic_stack", format!("is a {}, not a bool", v.kind())))?),
            },
            explicit_arg_sizes: explicit_arg_sizes(&fields, kernel)?,
            name,
        });
    }
    Ok(CodeObjectMetadata { target, version, kernels })
}

/// `.args`: the sizes of the arguments that are not `hidden_*`.
fn explicit_arg_sizes(fields: &Fields, kernel: &Value) -> Result<Option<Vec<u32>>, MetadataError> {
    let Some(args) = kernel.get(".args") else { return Ok(None) };
    let args = args.as_array().ok_or_else(|| fields.bad(".args", format!("is a {}, not an array", args.kind())))?;
    let mut sizes = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let key = format!(".args[{i}]");
        if !matches!(arg, Value::Map(_)) {
            return Err(fields.bad(&key, format!("is a {}, not a map", arg.kind())));
        }
        let kind = fields.str(arg, ".value_kind")?;
        if !kind.starts_with("hidden_") {
            sizes.push(fields.u32(arg, ".size")?);
        }
    }
    Ok(Some(sizes))
}

struct Fields<'a> {
    file: &'a str,
    context: String,
}

impl Fields<'_> {
    fn bad(&self, key: &str, reason: impl Into<String>) -> MetadataError {
        MetadataError::BadValue { file: self.file.to_string(), key: key.to_string(), context: self.context.clone(), reason: reason.into() }
    }

    fn get<'v>(&self, map: &'v Value, key: &str) -> Result<&'v Value, MetadataError> {
        map.get(key).ok_or_else(|| MetadataError::MissingKey {
            file: self.file.to_string(),
            key: key.to_string(),
            context: self.context.clone(),
        })
    }

    fn str(&self, map: &Value, key: &str) -> Result<String, MetadataError> {
        let v = self.get(map, key)?;
        v.as_str().map(str::to_string).ok_or_else(|| self.bad(key, format!("is a {}, not a string", v.kind())))
    }

    fn u32(&self, map: &Value, key: &str) -> Result<u32, MetadataError> {
        let v = self.get(map, key)?;
        self.to_u32(v, key)
    }

    fn optional_u32(&self, map: &Value, key: &str) -> Result<Option<u32>, MetadataError> {
        map.get(key).map(|v| self.to_u32(v, key)).transpose()
    }

    fn to_u32(&self, v: &Value, key: &str) -> Result<u32, MetadataError> {
        match v.as_u64() {
            Some(n) => u32::try_from(n).map_err(|_| self.bad(key, format!("is {n}, out of range"))),
            None => Err(self.bad(key, format!("is a {}, not a non-negative integer", v.kind()))),
        }
    }
}
