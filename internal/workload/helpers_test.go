package workload

// qwenPath is the Qwen3 tokenizer committed with the tokenizer package's tests.
const qwenPath = "../tokenizer/testdata/qwen3/tokenizer.json.gz"
