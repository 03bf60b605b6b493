//! What a cubin records about each kernel, read without a GPU: registers, stack frame,
//! launch bounds and parameter layout from the `.nv.info` / `.nv.info.<kernel>`
//! sections, static shared memory from the size of `.nv.shared.<kernel>`. Also the
//! ptxas report NVRTC writes into its log under `--ptxas-options=-v`, which adds spill
//! byte counts and is used to cross-check the cubin.
//!
//! Record layout (both CUDA 12.x cubins, EI_OSABI 0x33, and 13.x, EI_OSABI 0x41): `u8
//! format, u8 attribute`, then for format 4 (EIFMT_SVAL) a `u16` size and that many bytes
//! of payload, else a `u16` value (formats 1 NVAL, 2 BVAL, 3 HVAL).

use std::collections::HashMap;

const EM_CUDA: u16 = 190;

const EIFMT_SVAL: u8 = 4;
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
const EIATTR_KPARAM_INFO: u8 = 0x17;
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const EIATTR_MAXREG_COUNT: u8 = 0x1b;
const EIATTR_REGCOUNT: u8 = 0x2f;
const EIATTR_NUM_BARRIERS: u8 = 0x4c;

/// On sm_90 a kernel's `.nv.shared.<kernel>` section, when present, also holds the 1 KiB of
/// shared memory the system reserves per block (`.nv.reservedSmem`); ptxas's "bytes smem"
/// and the kernel's own `__shared__` declarations do not include it. Measured with NVRTC
/// 13.0: 0 / 100 / 1024 / 2048 / 4096 declared bytes give sections of 1024 / 1124 / 2048 /
/// 3072 / 5120 bytes, and a module without any `__shared__` has no such section.
pub const SM90_RESERVED_SHARED: u32 = 1024;

/// One kernel parameter as the cubin lays it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub ordinal: u32,
    pub offset: u32,
    pub size: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub registers: u32,
    /// Per-thread stack frame (EIATTR_FRAME_SIZE): private arrays and spills.
    pub frame_bytes: u32,
    /// Per-thread stack including callees (EIATTR_MIN_STACK_SIZE).
    pub min_stack_bytes: u32,
    /// Size of `.nv.shared.<kernel>` (0 when absent), reserved bytes included.
    pub shared_section_bytes: u32,
    /// `__launch_bounds__` maximum block (EIATTR_MAX_THREADS), if any.
    pub max_threads: Option<[u32; 3]>,
    /// Register cap (EIATTR_MAXREG_COUNT; 255 when unbounded).
    pub max_registers: Option<u32>,
    pub barriers: u32,
    /// Parameters in ordinal order.
    pub params: Vec<Param>,
    /// Bytes of the parameter constant bank (EIATTR_CBANK_PARAM_SIZE).
    pub param_bytes: Option<u32>,
}

impl KernelInfo {
    pub fn param_sizes(&self) -> Vec<u32> {
        self.params.iter().map(|p| p.size).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CubinInfo {
    /// Compute capability as a number: 90 for sm_90.
    pub sm: u32,
    pub kernels: Vec<KernelInfo>,
}

impl CubinInfo {
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Shared memory the toolchain adds to `shared_section_bytes` on this architecture.
    pub fn reserved_shared(&self, kernel: &KernelInfo) -> u32 {
        if self.sm >= 90 && kernel.shared_section_bytes >= SM90_RESERVED_SHARED { SM90_RESERVED_SHARED } else { 0 }
    }
}

struct Section<'a> {
    name: String,
    kind: u32,
    size: u64,
    link: u32,
    data: &'a [u8],
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&self, at: usize, len: usize) -> Result<&'a [u8], String> {
        at.checked_add(len).and_then(|end| self.0.get(at..end)).ok_or_else(|| format!("truncated at byte {at} (+{len})"))
    }
    fn u16(&self, at: usize) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(at, 2)?.try_into().unwrap()))
    }
    fn u32(&self, at: usize) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(at, 4)?.try_into().unwrap()))
    }
    fn u64(&self, at: usize) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes(at, 8)?.try_into().unwrap()))
    }
}

fn c_string(bytes: &[u8], at: usize) -> String {
    let tail = bytes.get(at..).unwrap_or(&[]);
    let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

fn le_u32(payload: &[u8], index: usize) -> u32 {
    payload.get(index * 4..index * 4 + 4).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()))
}

/// The kernels of a cubin and what it records about each. An error says what is malformed.
pub fn parse(image: &[u8]) -> Result<CubinInfo, String> {
    let r = Reader(image);
    if r.bytes(0, 4)? != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if image[4] != 2 || image[5] != 1 {
        return Err("not a little-endian 64-bit ELF".into());
    }
    let machine = r.u16(0x12)?;
    if machine != EM_CUDA {
        return Err(format!("e_machine {machine}, not EM_CUDA (190)"));
    }
    let flags = r.u32(0x30)?;
    // CUDA 12.x keeps the SM in bits 16..24, CUDA 13.x in bits 8..16.
    let sm = match (flags >> 16) & 0xff {
        0 => (flags >> 8) & 0xff,
        sm => sm,
    };
    let shoff = r.u64(0x28)? as usize;
    let shentsize = r.u16(0x3a)? as usize;
    let shnum = r.u16(0x3c)? as usize;
    let shstrndx = r.u16(0x3e)? as usize;
    if shentsize < 64 {
        return Err(format!("section header size {shentsize}"));
    }

    let mut raw = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let at = shoff + i * shentsize;
        let (name, kind, offset, size, link) = (r.u32(at)?, r.u32(at + 4)?, r.u64(at + 0x18)?, r.u64(at + 0x20)?, r.u32(at + 0x28)?);
        const SHT_NOBITS: u32 = 8;
        let data = if kind == SHT_NOBITS || size == 0 { &[][..] } else { r.bytes(offset as usize, size as usize)? };
        raw.push((name, kind, size, link, data));
    }
    let names = raw.get(shstrndx).map(|s| s.4).ok_or("no section name table")?;
    let sections: Vec<Section> = raw
        .iter()
        .map(|&(name, kind, size, link, data)| Section { name: c_string(names, name as usize), kind, size, link, data })
        .collect();

    // symbol index -> name, from the symbol table named by the .nv.info sections' sh_link
    let symbol_names = |table: usize| -> Result<Vec<String>, String> {
        let symtab = sections.get(table).ok_or(format!("no symbol table at section {table}"))?;
        let strtab = sections.get(symtab.link as usize).ok_or("no string table for the symbol table")?;
        let t = Reader(symtab.data);
        (0..symtab.data.len() / 24).map(|i| Ok(c_string(strtab.data, t.u32(i * 24)? as usize))).collect()
    };

    let mut kernels: Vec<KernelInfo> = Vec::new();
    let mut by_symbol: Vec<(String, u8, u32)> = Vec::new(); // (symbol, attribute, value) from .nv.info
    const SHT_CUDA_INFO: u32 = 0x7000_0000;
    for section in &sections {
        if section.kind != SHT_CUDA_INFO {
            continue;
        }
        let records = records(section.data).map_err(|e| format!("{}: {e}", section.name))?;
        if section.name == ".nv.info" {
            let symbols = symbol_names(section.link as usize)?;
            for (attribute, payload) in records {
                if let Record::Sized(payload) = payload
                    && matches!(attribute, EIATTR_REGCOUNT | EIATTR_FRAME_SIZE | EIATTR_MIN_STACK_SIZE)
                {
                    let symbol = symbols.get(le_u32(payload, 0) as usize).cloned().unwrap_or_default();
                    by_symbol.push((symbol, attribute, le_u32(payload, 1)));
                }
            }
        } else if let Some(name) = section.name.strip_prefix(".nv.info.") {
            let mut kernel = KernelInfo { name: name.to_string(), ..KernelInfo::default() };
            for (attribute, payload) in records {
                match (attribute, payload) {
                    (EIATTR_KPARAM_INFO, Record::Sized(p)) => {
                        // u32 index, u16 ordinal, u16 offset, u32 flags (size in bits 18..32)
                        let word = le_u32(p, 1);
                        kernel.params.push(Param { ordinal: word & 0xffff, offset: word >> 16, size: le_u32(p, 2) >> 18 });
                    }
                    (EIATTR_MAX_THREADS, Record::Sized(p)) => kernel.max_threads = Some([le_u32(p, 0), le_u32(p, 1), le_u32(p, 2)]),
                    (EIATTR_CBANK_PARAM_SIZE, Record::Value(v)) => kernel.param_bytes = Some(v as u32),
                    (EIATTR_MAXREG_COUNT, Record::Value(v)) => kernel.max_registers = Some(v as u32),
                    (EIATTR_NUM_BARRIERS, Record::Value(v)) => kernel.barriers = v as u32,
                    _ => {}
                }
            }
            kernel.params.sort_by_key(|p| p.ordinal);
            kernels.push(kernel);
        }
    }
    for kernel in &mut kernels {
        for (symbol, attribute, value) in &by_symbol {
            if *symbol == kernel.name {
                match *attribute {
                    EIATTR_REGCOUNT => kernel.registers = *value,
                    EIATTR_FRAME_SIZE => kernel.frame_bytes = *value,
                    EIATTR_MIN_STACK_SIZE => kernel.min_stack_bytes = *value,
                    _ => {}
                }
            }
        }
        let shared = format!(".nv.shared.{}", kernel.name);
        kernel.shared_section_bytes = sections.iter().find(|s| s.name == shared).map_or(0, |s| s.size as u32);
    }
    // informational sections of a kernel refer back to its text section: keep only real kernels
    kernels.retain(|k| sections.iter().any(|s| s.name == format!(".text.{}", k.name)));
    kernels.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(CubinInfo { sm, kernels })
}

enum Record<'a> {
    /// EIFMT_SVAL: a payload.
    Sized(&'a [u8]),
    /// EIFMT_NVAL, BVAL, HVAL: a 16-bit value.
    Value(u16),
}

/// The (attribute, record) pairs of one info section.
fn records(data: &[u8]) -> Result<Vec<(u8, Record<'_>)>, String> {
    let r = Reader(data);
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let (format, attribute) = (data[at], data[at + 1]);
        if format == EIFMT_SVAL {
            let size = r.u16(at + 2)? as usize;
            out.push((attribute, Record::Sized(r.bytes(at + 4, size)?)));
            at += 4 + size;
        } else {
            out.push((attribute, Record::Value(r.u16(at + 2)?)));
            at += 4;
        }
    }
    Ok(out)
}

/// One function's lines of the ptxas report (`--ptxas-options=-v`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasFunction {
    pub registers: u32,
    pub barriers: u32,
    pub shared_bytes: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub cumulative_stack_bytes: u32,
}

/// Entry functions of a ptxas report by name. The report looks like:
/// ```text
/// ptxas info    : Compiling entry function 'spills' for 'sm_90'
/// ptxas info    : Function properties for spills
/// ptxas         .     1456 bytes stack frame, 1340 bytes spill stores, 2668 bytes spill loads
/// ptxas info    : Used 32 registers, used 0 barriers, 1456 bytes cumulative stack size
/// ptxas info    : Used 30 registers, used 1 barriers, 1024 bytes smem
/// ```
pub fn parse_ptxas_report(log: &str) -> HashMap<String, PtxasFunction> {
    let mut out: HashMap<String, PtxasFunction> = HashMap::new();
    let mut entry: Option<String> = None; // the entry function whose "Used" line comes next
    let mut properties: Option<String> = None; // the function whose stack line comes next
    let quoted = |line: &str| line.split('\'').nth(1).map(str::to_string);
    let number_before = |line: &str, unit: &str| -> u32 {
        let Some(end) = line.find(unit) else { return 0 };
        line[..end].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty()).and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    for line in log.lines() {
        if line.contains("Compiling entry function") {
            entry = quoted(line);
            if let Some(name) = &entry {
                out.entry(name.clone()).or_default();
            }
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            properties = Some(rest.trim().to_string());
        } else if line.contains("bytes stack frame") {
            if let Some(f) = properties.as_ref().and_then(|name| out.get_mut(name)) {
                f.stack_frame_bytes = number_before(line, " bytes stack frame");
                f.spill_store_bytes = number_before(line, " bytes spill stores");
                f.spill_load_bytes = number_before(line, " bytes spill loads");
            }
        } else if line.contains(": Used ") && line.contains(" registers") {
            if let Some(f) = entry.as_ref().and_then(|name| out.get_mut(name)) {
                f.registers = number_before(line, " registers");
                f.barriers = number_before(line, " barriers");
                f.shared_bytes = number_before(line, " bytes smem");
                f.cumulative_stack_bytes = number_before(line, " bytes cumulative stack size");
            }
            entry = None;
        }
    }
    out
}
