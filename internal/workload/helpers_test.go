package workload

// qwenPath is the Qwen3 tokenizer committed with the tokenizer package's tests.
const qwenPath = "../tokenizer/testdata/qwen3/tokenizer.json.gz"

// llama2Path is the Llama 2 tokenizer (SentencePiece-style: "▁" word boundaries, byte
// fallback) committed with the tokenizer package's tests.
const llama2Path = "../tokenizer/testdata/llama2/tokenizer.json.gz"
