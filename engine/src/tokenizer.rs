//! Builds a Hugging Face `tokenizers` tokenizer (byte-level BPE) from the
//! vocabulary, merges and token types stored in GGUF metadata, so the engine
//! and its clients count tokens with the same vocabulary.

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, Tokenizer};

use crate::gguf::{Gguf, GgufError, Value};

/// GGUF token type for control (special) tokens.
const TOKEN_TYPE_CONTROL: u64 = 3;
/// GGUF token type for user-defined added tokens.
const TOKEN_TYPE_USER_DEFINED: u64 = 4;

/// The engine's tokenizer plus the special ids it needs.
pub struct EngineTokenizer {
    /// The underlying `tokenizers` tokenizer.
    pub inner: Tokenizer,
    /// End-of-sequence id.
    pub eos: u32,
    /// Beginning-of-sequence id.
    pub bos: u32,
    /// Extra ids that end a turn (e.g. `<|im_end|>`).
    pub stop_ids: Vec<u32>,
    /// Prepend BOS when encoding prompts.
    pub add_bos: bool,
}

fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>, GgufError> {
    v.and_then(Value::as_array)
        .ok_or_else(|| GgufError(format!("missing {what}")))?
        .iter()
        .map(|x| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| GgufError(format!("{what}: non-string entry")))
        })
        .collect()
}

/// The byte-level BPE model of vocabulary `tokens` (id = index) and `merges` (`"a b"` each;
/// malformed ones skipped).
fn bpe_model(tokens: &[String], merges: &[String]) -> Result<BPE, GgufError> {
    let merges: Vec<(String, String)> = merges
        .iter()
        .filter_map(|m| {
            let mut it = m.splitn(2, ' ');
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect();
    BPE::builder()
        .vocab_and_merges(
            tokens
                .iter()
                .enumerate()
                .map(|(i, t)| (t.clone(), i as u32))
                .collect::<tokenizers::models::bpe::Vocab>(),
            merges,
        )
        .build()
        .map_err(|e| GgufError(format!("bpe: {e}")))
}

/// Byte-level pre-tokenization, after splitting digits one by one for the llama.cpp
/// pre-tokenizers `pre` whose regex does that.
fn set_pre_tokenizer(tk: &mut Tokenizer, pre: &str) {
    let bl = ByteLevel::new(false, true, true);
    // Pre-tokenizers whose llama.cpp regex splits digits one by one.
    let digits_split = matches!(
        pre,
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b"
    );
    if digits_split {
        tk.with_pre_tokenizer(Some(Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            PreTokenizerWrapper::ByteLevel(bl),
        ])));
    } else {
        tk.with_pre_tokenizer(Some(bl));
    }
}

/// Registers the control tokens as special and the user-defined ones as added tokens, by
/// their GGUF token `types`.
fn add_typed_tokens(tk: &mut Tokenizer, tokens: &[String], types: &[u64]) {
    let mut special = Vec::new();
    let mut user = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match types.get(i).copied() {
            Some(TOKEN_TYPE_CONTROL) => special.push(AddedToken::from(t.clone(), true)),
            Some(TOKEN_TYPE_USER_DEFINED) => user.push(AddedToken::from(t.clone(), false)),
            _ => {}
        }
    }
    let _ = tk.add_special_tokens(special);
    let _ = tk.add_tokens(user);
}

/// The ids that end generation: `eos`, the known end-of-turn tokens present in `tokens`,
/// and the model's `eot` id, each once.
fn stop_ids(tokens: &[String], eos: u32, eot: Option<u32>) -> Vec<u32> {
    let mut stop_ids = vec![eos];
    for name in ["<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"] {
        if let Some(&i) = tokens.iter().position(|t| t == name).as_ref() {
            let i = i as u32;
            if !stop_ids.contains(&i) {
                stop_ids.push(i);
            }
        }
    }
    if let Some(e) = eot {
        if !stop_ids.contains(&e) {
            stop_ids.push(e);
        }
    }
    stop_ids
}

impl EngineTokenizer {
    /// Build from GGUF metadata (`tokenizer.ggml.*`, model `gpt2`).
    pub fn from_gguf(g: &Gguf) -> Result<Self, GgufError> {
        let model = g.get_str("tokenizer.ggml.model").unwrap_or("");
        if model != "gpt2" {
            return Err(GgufError(format!(
                "tokenizer model {model:?} unsupported (byte-level BPE `gpt2` only)"
            )));
        }
        let tokens = strings(g.get("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens")?;
        let merges_s = strings(g.get("tokenizer.ggml.merges"), "tokenizer.ggml.merges")?;
        let types: Vec<u64> = g
            .get("tokenizer.ggml.token_type")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(1)).collect())
            .unwrap_or_default();
        let mut tk = Tokenizer::new(bpe_model(&tokens, &merges_s)?);
        set_pre_tokenizer(
            &mut tk,
            g.get_str("tokenizer.ggml.pre").unwrap_or("default"),
        );
        tk.with_decoder(Some(ByteLevelDecoder::default()));
        add_typed_tokens(&mut tk, &tokens, &types);
        let id = |k: &str| g.get_u64(k).map(|v| v as u32);
        let eos = id("tokenizer.ggml.eos_token_id").unwrap_or(0);
        let bos = id("tokenizer.ggml.bos_token_id").unwrap_or(eos);
        let stop_ids = stop_ids(&tokens, eos, id("tokenizer.ggml.eot_token_id"));
        let add_bos = g
            .get("tokenizer.ggml.add_bos_token")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(EngineTokenizer {
            inner: tk,
            eos,
            bos,
            stop_ids,
            add_bos,
        })
    }

    /// Encode text; special-token strings in it are parsed as special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match self.inner.encode_fast(text, false) {
            Ok(e) => e.get_ids().to_vec(),
            Err(_) => Vec::new(),
        }
    }

    /// Encode a prompt, adding BOS when the model asks for it.
    pub fn encode_prompt(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        if self.add_bos {
            ids.push(self.bos);
        }
        ids.extend(self.encode(text));
        ids
    }

    /// Decode ids to text, skipping special tokens.
    pub fn decode(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, true).unwrap_or_default()
    }

    /// The bytes a token stands for: byte-level BPE pieces mapped back
    /// through GPT-2's byte-to-character table; added and special tokens
    /// are their text. Unknown ids give no bytes.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        let Some(piece) = self.inner.id_to_token(id) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(piece.len());
        for ch in piece.chars() {
            match byte_of_char(ch) {
                Some(b) => out.push(b),
                None => out.extend_from_slice(ch.encode_utf8(&mut [0u8; 4]).as_bytes()),
            }
        }
        out
    }

    /// The tokenizer as `tokenizer.json` text.
    pub fn to_json(&self) -> String {
        self.inner.to_string(true).unwrap_or_default()
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }
}

/// Inverse of GPT-2's `bytes_to_unicode`: printable Latin-1 bytes stand for
/// themselves, the other 68 bytes were shifted to U+0100.. in byte order.
fn byte_of_char(ch: char) -> Option<u8> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    let c = ch as u32;
    if c < 256 && printable(c) {
        return Some(c as u8);
    }
    let k = c.checked_sub(256)? as usize;
    (0u32..256)
        .filter(|&b| !printable(b))
        .nth(k)
        .map(|b| b as u8)
}

#[cfg(test)]
mod tests {
    use super::byte_of_char;

    #[test]
    fn byte_level_inverse() {
        assert_eq!(byte_of_char('a'), Some(b'a'));
        assert_eq!(byte_of_char('\u{120}'), Some(b' ')); // 'Ġ'
        assert_eq!(byte_of_char('\u{10a}'), Some(b'\n')); // 'Ċ'
        assert_eq!(byte_of_char('\u{100}'), Some(0));
        assert_eq!(byte_of_char('\u{143}'), Some(173));
        assert_eq!(byte_of_char('\u{144}'), None);
    }
}
