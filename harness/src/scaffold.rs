//! `contracts new <source> <symbol>`: a starting contract read off a kernel's signature. The
//! `[kernel]` argument list and the `[tensors]` come from the parameters (a pointer is a
//! tensor, input when it points to `const`; an `int` right after a pointer and named after it,
//! `x_kind`, is its dtype code; other integers are shape symbols; a `float` is a parameter),
//! and what cannot be read off a signature (shapes, launch, inputs, oracle) is left as a
//! placeholder that keeps the contract from loading until it is filled in.

use crate::mutate::tokens::{self, Kind, Token};

/// One parameter of the kernel, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    /// The type's words, `const void *`.
    pub ty: String,
    pub pointer: bool,
    pub is_const: bool,
}

/// The parameters of the `__global__` function `symbol` in `source`.
pub fn signature(source: &str, symbol: &str) -> Result<Vec<Param>, String> {
    let tokens = tokens::tokenize(source);
    let found = tokens.windows(2).enumerate().find_map(|(i, w)| {
        let is_kernel = w[0].kind == Kind::Ident && w[0].text == symbol && w[1].text == "(" && declared_global(&tokens[..i]);
        is_kernel.then_some(i + 1)
    });
    let open = found.ok_or_else(|| format!("no `__global__` function `{symbol}` in the source"))?;
    let close = tokens::closing(&tokens, open).ok_or_else(|| format!("`{symbol}`'s parameter list does not close"))?;
    let inside = &tokens[open + 1..close];
    if inside.is_empty() || (inside.len() == 1 && inside[0].text == "void") {
        return Ok(Vec::new());
    }
    let mut params = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (j, t) in inside.iter().enumerate() {
        match t.text.as_str() {
            "(" | "[" | "<" => depth += 1,
            ")" | "]" | ">" => depth -= 1,
            "," if depth == 0 => {
                params.push(param(&inside[start..j], symbol)?);
                start = j + 1;
            }
            _ => {}
        }
    }
    params.push(param(&inside[start..], symbol)?);
    Ok(params)
}

/// Whether the declaration that ends at these tokens is a kernel: `__global__` since the last
/// `;`, `}` or `{`.
fn declared_global(before: &[Token]) -> bool {
    before.iter().rev().take_while(|t| !matches!(t.text.as_str(), ";" | "}" | "{")).any(|t| t.text == "__global__")
}

fn param(tokens: &[Token], symbol: &str) -> Result<Param, String> {
    let name = tokens
        .iter()
        .rev()
        .find(|t| t.kind == Kind::Ident)
        .filter(|t| tokens.len() > 1 && tokens.last().is_some_and(|l| l.text == t.text))
        .ok_or_else(|| format!("a parameter of `{symbol}` without a name: give every parameter one"))?;
    let ty: Vec<&str> = tokens[..tokens.len() - 1].iter().map(|t| t.text.as_str()).filter(|t| *t != "__restrict__").collect();
    let pointer = ty.contains(&"*");
    let is_const = pointer && ty.iter().take_while(|t| **t != "*").any(|t| *t == "const");
    Ok(Param { name: name.text.clone(), ty: ty.join(" "), pointer, is_const })
}

/// The dtypes a pointer's element type allows (`void`: any float type, chosen by its code).
fn pointee_dtypes(ty: &str) -> &'static str {
    let element = ty.split('*').next().unwrap_or("").replace("const", "");
    let words: Vec<&str> = element.split_whitespace().collect();
    match words.as_slice() {
        ["float"] => "[\"f32\"]",
        ["__half"] | ["half"] => "[\"f16\"]",
        ["hip_bfloat16"] | ["__hip_bfloat16"] | ["__nv_bfloat16"] => "[\"bf16\"]",
        ["unsigned", "short"] | ["uint16_t"] => "[\"f16\", \"bf16\"]",
        ["int"] | ["int32_t"] => "[\"i32\"]",
        ["unsigned"] | ["unsigned", "int"] | ["uint32_t"] => "[\"u32\"]",
        ["unsigned", "char"] | ["uint8_t"] => "[\"u8\"]",
        _ => "[\"f32\", \"f16\", \"bf16\"]",
    }
}

/// The contract text for `op`: its `[tensors]` and `[kernel]` read off `params`, the rest
/// placeholders. `source` is the kernel's file as the kernels folder names it.
pub fn contract(op: &str, source: &str, symbol: &str, params: &[Param]) -> String {
    let is_code_of = |i: usize| -> bool {
        let p = &params[i];
        i > 0 && params[i - 1].pointer && !p.pointer && p.ty.ends_with("int") && {
            let base = &params[i - 1].name;
            ["_kind", "_dtype", "_type", "_code"].iter().any(|s| p.name == format!("{base}{s}"))
        }
    };
    let mut args = Vec::new();
    let mut tensors = Vec::new();
    let mut scalar_params = Vec::new();
    let mut symbols = Vec::new();
    for (i, p) in params.iter().enumerate() {
        if p.pointer {
            let coded = params.get(i + 1).is_some() && is_code_of(i + 1);
            let dtypes = if coded { "[\"f32\", \"f16\", \"bf16\"]" } else { pointee_dtypes(&p.ty) };
            let role = if p.is_const { "input" } else { "output" };
            tensors.push(format!("{} = {{ role = \"{role}\", dtypes = {dtypes}, shape = \"?\" }}", p.name));
            args.push(p.name.clone());
        } else if is_code_of(i) {
            args.push(format!("dtype({})", params[i - 1].name));
        } else if matches!(p.ty.as_str(), "float" | "double") {
            scalar_params.push(format!("{} = \"float\"", p.name));
            args.push(format!("param({})", p.name));
        } else if p.ty.contains("long") || p.ty.contains("int64") || p.ty.contains("size_t") {
            symbols.push(p.name.clone());
            args.push(format!("long({})", p.name));
        } else {
            symbols.push(p.name.clone());
            args.push(format!("int({})", p.name));
        }
    }
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let inputs: Vec<String> = params
        .iter()
        .filter(|p| p.pointer && p.is_const)
        .map(|p| format!("{} = \"?\"   # a generator: normal(0, 1), int(0, n), ...", p.name))
        .collect();
    let symbol_list = if symbols.is_empty() { "the symbols your shapes use".to_string() } else { symbols.join(", ") };
    let mut text = format!(
        "# A starting contract for `{symbol}` ({source}), written by `contracts new` from its signature.\n\
         # Read the guesses (a pointer to const is an input, any other an output; an int named\n\
         # after the pointer before it, `x_kind`, is its dtype code) and fill in every `?`:\n\
         # the contract does not load until each is filled in.\n\
         op = \"{op}\"\n\
         about = \"?\"\n\n\
         [tensors]   # each shape over the shape symbols ({symbol_list})\n{}\n\n\
         [kernel]\n\
         source = \"{source}\"\n\
         symbol = \"{symbol}\"\n",
        tensors.join("\n")
    );
    if !scalar_params.is_empty() {
        text.push_str(&format!("params = {{ {} }}\n", scalar_params.join(", ")));
    }
    text.push_str(&format!(
        "args = [{}]\n\
         grid = [\"?\"]    # blocks, as shape expressions: \"ceil_div(rows * k, 256)\"\n\
         block = [\"?\"]   # threads per block: 256\n\
         # requires = [\"k % 2 == 0\"]   # optional: what the kernel needs of its shapes (see the README)\n\n\
         [[record]]\n\
         name = \"?\"\n\n\
         [shapes]\n\
         # one case per seam worth checking: one element, a block plus one, a large batch; the\n\
         # contract loads once the cases cover what the README's \"What a contract must cover\" asks\n\
         cases = [{{ {} }}]\n\n\
         [inputs]\n{}\n\n\
         [nonfinite]\n\
         policy = \"?\"   # propagate, ignore, or unspecified with a reason\n\n\
         [seams]\n\
         axis = \"?\"   # the shape symbol counting rows (each tensor's first dimension), or replace\n\
         # this table by `seams = \"none: <why the rows are not independent>\"` above it\n\n\
         [reference]\n\
         oracle = \"?\"   # a named oracle whose tensors these are; or, in its place, a C++ function\n\
         # (reference = \"../ref/x.cpp:function\") or another op's kernel to match bit for bit (replaces = \"op\")\n\
         tolerance = \"exact\"\n",
        quoted.join(", "),
        symbols.iter().map(|s| format!("{s} = \"?\"")).collect::<Vec<_>>().join(", "),
        inputs.join("\n")
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// Where a contract written by hand passes another argument than `contracts new` guesses
    /// from the signature: (op, argument index, the contract's argument), each with the reason
    /// the signature cannot tell.
    const NOT_READ_OFF_THE_SIGNATURE: &[(&str, usize, &str)] = &[
        // an int that is a parameter, not a shape symbol
        ("tf_copy_cols", 4, "param(start)"),
        ("tf_rope", 7, "param(layout)"),
        ("tf_conv1d_causal", 6, "param(has_bias)"),
        ("tf_conv1d_causal", 12, "param(silu)"),
        // a dtype code not named after its pointer (`k_kind` after `k_cache`, `kind` after
        // `logits`, `v_kind` after `v_cache`, `scale_kind` after `biases`, for both)
        ("tf_score_keys", 3, "dtype(k_cache)"),
        ("tf_argmax", 1, "dtype(logits)"),
        ("tf_apply_values", 3, "dtype(v_cache)"),
        ("tf_embed_rows", 3, "dtype(scales)"),
        // `state_kind` after `state_in` (for both states), `scale_kind` after `biases`
        ("tf_conv1d_causal", 8, "dtype(state_in)"),
        ("tf_quant_matvec", 5, "dtype(scales)"),
    ];

    /// The argument list `contracts new` reads off each data op's kernel is the one its
    /// contract, written by hand, launches with, but where the list above says why not; and
    /// each tensor's role is the one guessed, but for a tensor the engine derives.
    #[test]
    fn the_arguments_read_off_each_data_ops_signature_are_its_contracts() {
        let mut ops = 0;
        for entry in std::fs::read_dir(root().join("contracts")).unwrap() {
            let written = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let contract: toml::Table = written.parse().unwrap();
            let Some(kernel) = contract.get("kernel") else { continue };
            let op = contract["op"].as_str().unwrap();
            let (source, symbol) = (kernel["source"].as_str().unwrap(), kernel["symbol"].as_str().unwrap());
            let params = signature(&std::fs::read_to_string(root().join("kernels").join(source)).unwrap(), symbol).unwrap();
            let text = super::contract(op, source, symbol, &params);
            let guessed: toml::Table = text.replace('?', "").parse().unwrap_or_else(|e| panic!("{op}: {e}\n{text}"));
            let args = |t: &toml::Table| -> Vec<String> {
                t["kernel"]["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
            };
            let mut want = args(&guessed);
            for (_, i, arg) in NOT_READ_OFF_THE_SIGNATURE.iter().filter(|(o, ..)| *o == op) {
                want[*i] = arg.to_string();
            }
            assert_eq!(args(&contract), want, "{op}:\n{text}");
            for (name, tensor) in contract["tensors"].as_table().unwrap() {
                let role = tensor["role"].as_str().unwrap();
                let guess = guessed["tensors"][name]["role"].as_str().unwrap();
                assert!(role == guess || (role == "derived" && guess == "input"), "{op}: {name} as {role}, guessed {guess}");
            }
            ops += 1;
        }
        assert!(ops >= 17, "{ops} data ops");
    }

    #[test]
    fn the_starting_contract_does_not_load_until_its_placeholders_are_filled() {
        let source = "#include \"common.h\"\n// a kernel\nextern \"C\" __global__ void scale(const float* __restrict__ x, float* y, long long n, float s) {}\n";
        let params = signature(source, "scale").unwrap();
        assert_eq!(params.len(), 4);
        assert!(params[0].pointer && params[0].is_const && !params[1].is_const);
        let text = contract("scale", "scale.hip", "scale", &params);
        assert!(text.contains("args = [\"x\", \"y\", \"long(n)\", \"param(s)\"]"), "{text}");
        assert!(text.contains("params = { s = \"float\" }") && text.contains("x = { role = \"input\", dtypes = [\"f32\"]"), "{text}");
        let error = crate::contract::Contract::parse("contracts/scale.toml", &text).unwrap_err();
        assert!(error.message.contains('?') || error.key.contains("shape"), "{error}");
        assert!(signature(source, "nope").unwrap_err().contains("no `__global__` function `nope`"));
        assert!(signature("__global__ void k(float*) {}", "k").unwrap_err().contains("without a name"));
    }
}
