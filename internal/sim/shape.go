package sim

import (
	"errors"
	"sort"
	"time"
)

// ModelShape is a decoder-only transformer's shape: enough to count its parameters, the
// FLOPs of a forward pass and the bytes of its KV cache.
type ModelShape struct {
	Name         string
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int // MLP width (gated MLP: gate, up and down projections)
	Vocab        int
	// TiedEmbeddings: the output projection reuses the embedding matrix (Llama 3.2 1B, 3B).
	TiedEmbeddings bool
	// BytesPerParam is the weight and KV-cache element size; 0 means 2 (bf16). A
	// deployment's weight_dtype and kv_dtype, when given, decide instead.
	BytesPerParam float64
	// KVBytesPerElem is the KV-cache element size when it differs from the weights' (a
	// deployment's kv_dtype); 0 means BytesPerParam.
	KVBytesPerElem float64
	// MaxContext is the longest sequence the model was trained for (config.json's
	// max_position_embeddings); 0 is unknown. A deployment's max_model_len may not exceed it.
	MaxContext int

	// Mixture of experts; Experts 0 is a dense model. MoELayers of the Layers have an MoE
	// block instead of the dense MLP (Intermediate wide): Experts routed experts, each a
	// gated MLP MoEIntermediate wide, ExpertsPerToken of them chosen per token, plus an
	// always-active shared MLP SharedIntermediate wide (DeepSeek's and Llama 4's shared
	// experts together; 0 is none) and a router (hidden × experts).
	Experts, ExpertsPerToken, MoELayers int
	MoEIntermediate, SharedIntermediate int
	// ExpertBytesPerParam is the routed experts' element size where the checkpoint keeps
	// them at another precision than the rest (gpt-oss: MXFP4 experts, bf16 attention); 0
	// is BytesPerParam. A deployment's weight_dtype or expert_dtype decides instead.
	ExpertBytesPerParam float64

	// Multi-head latent attention (DeepSeek-V2/V3); KVLoraRank 0 is ordinary attention.
	// The KV cache holds KVLoraRank + QKRopeDim elements per token and layer, the same on
	// every tensor-parallel rank (engines replicate it); QLoraRank 0 projects queries
	// directly. HeadDim is unused with MLA: queries and keys are QKNopeDim + QKRopeDim
	// wide, values VHeadDim.
	KVLoraRank, QLoraRank, QKNopeDim, QKRopeDim, VHeadDim int

	// SlidingLayers of the Layers attend to the last SlidingWindow tokens only (Mistral's
	// and gpt-oss's sliding-window layers); 0 is none.
	SlidingWindow, SlidingLayers int
}

// GPU is one accelerator: published dense bf16 tensor throughput, memory bandwidth and size.
type GPU struct {
	Name   string
	TFLOPS float64 // dense bf16 tensor TFLOP/s
	// FP8TFLOPS and FP4TFLOPS are the dense tensor rates of fp8 and fp4 matmuls where the
	// GPU has them (FP8 from Hopper and CDNA 3 on, FP4 on Blackwell and CDNA 4); 0 is none,
	// and weights of that precision compute at the rate they dequantize to (computeTFLOPS).
	FP8TFLOPS, FP4TFLOPS float64
	BandwidthGBps        float64 // HBM bandwidth, GB/s
	// MemoryGB is the memory the device reports (nvidia-smi's and rocm-smi's total), GB (10^9
	// bytes): the datasheets' "80 GB", "141 GB" and "192 GB" are about that many GiB.
	MemoryGB float64
	// SMs is the number of streaming multiprocessors: attention of few sequences cannot
	// spread its KV reads over all of them. 0 disables that limit.
	SMs int
	// USDPerHour is what the GPU costs an hour (gpu.usd_per_hour); 0 takes the preset's
	// list price (price.go), and a GPU of its own figures then has none.
	USDPerHour float64
	// InterconnectGBps is the GPU-to-GPU bandwidth in each direction (NVLink, or PCIe where
	// there is none), GB/s; InterconnectLatency is the time of an all-reduce too small for
	// bandwidth to matter. Tensor parallelism pays them; 0 leaves the GPU without a
	// tensor-parallel figure.
	InterconnectGBps    float64
	InterconnectLatency time.Duration
	// PowerW is the board's power limit (the datasheet's TDP), W, and IdlePowerW what it draws
	// idle: the simulator's power estimate runs between them (power.go). 0: not known, and
	// no estimate is made.
	PowerW, IdlePowerW float64
}

// Model presets: the published Hugging Face config.json shapes.
var modelPresets = map[string]ModelShape{
	"llama-3.1-8b":   {Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, MaxContext: 131072},
	"llama-3.1-70b":  {Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, MaxContext: 131072},
	"llama-3.1-405b": {Name: "llama-3.1-405b", Layers: 126, Hidden: 16384, Heads: 128, KVHeads: 8, HeadDim: 128, Intermediate: 53248, Vocab: 128256, MaxContext: 131072},
	"llama-3.2-1b":   {Name: "llama-3.2-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true, MaxContext: 131072},
	"llama-3.2-3b":   {Name: "llama-3.2-3b", Layers: 28, Hidden: 3072, Heads: 24, KVHeads: 8, HeadDim: 128, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true, MaxContext: 131072},
	"llama-2-70b":    {Name: "llama-2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 32000, MaxContext: 4096},
	"llama-2-7b":     {Name: "llama-2-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, Intermediate: 11008, Vocab: 32000, MaxContext: 4096},
	"codellama-34b":  {Name: "codellama-34b", Layers: 48, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 22016, Vocab: 32000, MaxContext: 16384},
	"qwen2.5-7b":     {Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064, MaxContext: 32768},
	"mistral-7b":     {Name: "mistral-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32768, MaxContext: 32768},

	// Mixtures of experts, each from its config.json on Hugging Face (read 2026-12-02;
	// internal/sim/testdata/hf-configs holds them, with the URLs and licences): what
	// ParseHFConfig makes of that file (TestMoEPresetsMatchConfigs holds them to it).
	// gpt-oss ships its experts in MXFP4 and the rest in bf16 (quantization_config), and
	// DeepSeek-V3/R1 and Kimi K2 all their linear layers in fp8 (block scales) with a bf16
	// KV cache; the others bf16.
	"gpt-oss-20b": {Name: "gpt-oss-20b", Layers: 24, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, Intermediate: 2880, Vocab: 201088, MaxContext: 131072,
		Experts: 32, ExpertsPerToken: 4, MoELayers: 24, MoEIntermediate: 2880, ExpertBytesPerParam: mxfp4Bytes, SlidingWindow: 128, SlidingLayers: 12},
	"gpt-oss-120b": {Name: "gpt-oss-120b", Layers: 36, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, Intermediate: 2880, Vocab: 201088, MaxContext: 131072,
		Experts: 128, ExpertsPerToken: 4, MoELayers: 36, MoEIntermediate: 2880, ExpertBytesPerParam: mxfp4Bytes, SlidingWindow: 128, SlidingLayers: 18},
	"qwen3-30b-a3b": {Name: "qwen3-30b-a3b", Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, Intermediate: 6144, Vocab: 151936, MaxContext: 40960,
		Experts: 128, ExpertsPerToken: 8, MoELayers: 48, MoEIntermediate: 768},
	"qwen3-235b-a22b": {Name: "qwen3-235b-a22b", Layers: 94, Hidden: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, Intermediate: 12288, Vocab: 151936, MaxContext: 40960,
		Experts: 128, ExpertsPerToken: 8, MoELayers: 94, MoEIntermediate: 1536},
	"deepseek-v3": deepseekV3("deepseek-v3"),
	"deepseek-r1": deepseekV3("deepseek-r1"), // DeepSeek-R1's config.json is DeepSeek-V3's
	"kimi-k2": {Name: "kimi-k2", Layers: 61, Hidden: 7168, Heads: 64, KVHeads: 64, HeadDim: 192, Intermediate: 18432, Vocab: 163840, MaxContext: 131072,
		Experts: 384, ExpertsPerToken: 8, MoELayers: 60, MoEIntermediate: 2048, SharedIntermediate: 2048,
		KVLoraRank: 512, QLoraRank: 1536, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128, BytesPerParam: 1, KVBytesPerElem: 2},
	"llama-4-scout": {Name: "llama-4-scout", Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 16384, Vocab: 202048, MaxContext: 10485760,
		Experts: 16, ExpertsPerToken: 1, MoELayers: 48, MoEIntermediate: 8192, SharedIntermediate: 8192},
	"llama-4-maverick": {Name: "llama-4-maverick", Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 16384, Vocab: 202048, MaxContext: 1048576,
		Experts: 128, ExpertsPerToken: 1, MoELayers: 24, MoEIntermediate: 8192, SharedIntermediate: 8192},
	"mixtral-8x7b": {Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32000, MaxContext: 32768,
		Experts: 8, ExpertsPerToken: 2, MoELayers: 32, MoEIntermediate: 14336},
}

// deepseekV3 is DeepSeek-V3's shape (deepseek-ai/DeepSeek-V3's config.json): 61 layers, the
// first 3 dense, 256 routed experts of which 8 per token and one shared, MLA with a 512-wide
// latent and 64 rope dimensions, fp8 weights. Its multi-token-prediction layer
// (num_nextn_predict_layers) is a draft model for speculative decoding, not counted.
func deepseekV3(name string) ModelShape {
	return ModelShape{Name: name, Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, Intermediate: 18432, Vocab: 129280, MaxContext: 163840,
		Experts: 256, ExpertsPerToken: 8, MoELayers: 58, MoEIntermediate: 2048, SharedIntermediate: 2048,
		KVLoraRank: 512, QLoraRank: 1536, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128, BytesPerParam: 1, KVBytesPerElem: 2}
}

// GPU presets: vendor datasheet figures (SXM parts; dense, not sparse, tensor FLOP/s). The
// interconnect is half the datasheet's bidirectional figure — NVLink 3/4/4/5 at 600, 900,
// 900 and 1,800 GB/s; the L40S has no NVLink, so PCIe Gen4 x16 at 64 GB/s — and the
// all-reduce latency is measured: vLLM's custom all-reduce of 512 B to 32 KB on H100s took
// 8.7–11.8 µs at TP 2, 4 and 8 (sgl-project/sglang#2904); NCCL's 8-byte all-reduce over
// PCIe on 8 RTX 4090s (the L40S's chip and bus) 42 µs (NVIDIA/nccl#1530). FP8 and FP4
// rates, dense (half the datasheets' "with sparsity" figures): H100 and H200 SXM 1,979 fp8;
// B200 4,500 fp8 and 9,000 fp4 (HGX B200 datasheet, 72 and 144 PFLOPS for 8 GPUs dense); L40S
// 733 fp8 (datasheet 1,466 with sparsity); the A100 has neither.
//
// H200 NVL, the PCIe card (nvidia.com/en-us/data-center/h200, its NVL column): the SXM part's
// memory and bandwidth, its tensor rates 1,671 bf16 and 3,341 fp8 "with sparsity" (835.5 and
// 1,670.5 dense, 0.844 of the SXM's) at up to 600 W (max_power_limit 600 for H200_NVL in MLPerf
// v5.1's known_hardware.py); NVLink bridges of 2 or 4 cards at 900 GB/s (450 each way), so a
// tp beyond 4 crosses PCIe, which the preset does not model. Its memory total is the SXM's
// nvidia-smi report, ASSUMED (the same 141 GB of HBM3e; no NVL report read).
//
// The presets added for issue 27 (datasheets read 2026-12-02; docs/simulator.md lists the
// URLs): AMD Instinct MI300X, MI325X (amd.com product pages and the CDNA 3 white paper:
// 1,307.4 bf16 and 2,614.9 fp8 dense TFLOP/s, 304 CUs, 5.3 and 6.0 TB/s, 192 and 256 GB,
// Infinity Fabric 7 links of 128 GB/s bidirectional = 896, so 448 each way) and MI355X
// (amd.com: 2,516.6 bf16, 5,033.2 fp8, 10,066.3 MXFP4 dense, 256 CUs, 8 TB/s, 288 GB,
// Infinity Fabric 1,075 GB/s bidirectional); NVIDIA HGX B300 (nvidia.com HGX page: 8 GPUs
// 36/72/108 PFLOPS bf16/fp8/fp4 dense with 2.3 TB at 8 TB/s each; NVLink 5; 160 SMs from the
// Blackwell Ultra technical blog), H20 (NVIDIA's H20 product brief: 148 bf16 and 296 fp8
// dense, 96 GB HBM3 at 4.0 TB/s, NVLink 900 GB/s; 78 SMs as reported by TechPowerUp's GPU
// database, which NVIDIA does not publish), L4 (datasheet: 121 bf16 and 242.5 fp8 dense,
// 24 GB at 300 GB/s, 58 SMs, PCIe Gen4 x16), A10G (AWS's variant of the A10, for which
// NVIDIA publishes no datasheet of its own: the A10's 125 bf16 dense, 24 GB at 600 GB/s, 72
// SMs, PCIe Gen4 x16) and RTX PRO 6000 Blackwell Server Edition (datasheet: 96 GB GDDR7 at
// 1,597 GB/s, 188 SMs, 4 PFLOPS fp4 with sparsity: 2,015 fp4, 1,007.6 fp8 and 503.8 bf16
// dense; PCIe Gen5 x16, 64 GB/s each way). The AMD parts' all-reduce latency is NVLink's
// figure, unmeasured (RCCL's small all-reduces may well be slower).
// GB200, one GPU of NVIDIA's GB200 NVL72 rack (nvidia.com/en-us/data-center/gb200-nvl72):
// the page states the rack's 72 GPUs at 360 / 720 / 1,440 PFLOPS bf16 / fp8 / fp4 "with
// sparsity", so 2,500 / 5,000 / 10,000 dense a GPU, and 13.4 TB of HBM3e at 576 TB/s, 186 GB
// at 8 TB/s a GPU (186 GB is also the accelerator_memory_capacity of NVIDIA's MLPerf v5.1
// system file closed/NVIDIA/systems/GB200-NVL72_GB200-186GB_aarch64x4_TRT.json); NVLink 5 at
// 130 TB/s for the rack, 1.8 TB/s a GPU, 900 each way. NVIDIA publishes no SM count for it:
// 148 is the B200's, ASSUMED (its MIG slices hold 2 SMs more than the B200's in nvidia-smi mig
// -lgip, NVIDIA/gpu-operator#1303 against #1242, so the full part may have a few more).
// Board power (PowerW) is each datasheet's maximum (GB200 1,200 W: "GB200 TGP 1200W" in that
// system file, and max_power_limit 1200 for GB200 in NVIDIA's harness,
// closed/NVIDIA/code/common/systems/known_hardware.py): NVIDIA A100 SXM 400 W, H100 and H200 SXM
// 700 W, HGX B200 1,000 W and B300 1,100 W a GPU, L40S 350 W, L4 72 W, H20 400 W, RTX PRO 6000
// Blackwell Server Edition 600 W; AMD MI300X 750 W, MI325X 1,000 W, MI355X 1,400 W. A10G's is
// not published (none). IdlePowerW is an assumption, about a tenth of it (an idle HGX H100
// reads 60-90 W a GPU in nvidia-smi).
//
// Memory (MemoryGB) is the total the device reports, which engines size their KV cache from
// (vLLM's gpu_memory_utilization and SGLang's mem_fraction_static are fractions of it):
// nvidia-smi's memory.total, driver 580.95.05, A100-SXM4-80GB 81,920 MiB, H100 80GB HBM3
// 81,559, H200 143,771, B200 183,359, B300 SXM6 275,040, L40S 46,068, L4 23,034, A10 (A10G)
// 23,028, RTX PRO 6000 Blackwell Server Edition 97,887 MiB (one probe of each on a cloud
// service, 2026); rocm-smi's VRAM total of an MI300X, 206,158,430,208 bytes (192 GiB). The
// datasheets' round figures are GiB, so the GB200's 186, the MI325X's 256, the MI355X's 288
// and the H20's 96 are taken as GiB, ASSUMED (no device report read).
var gpuPresets = map[string]GPU{
	"a100":     {Name: "a100", TFLOPS: 312, BandwidthGBps: 2039, MemoryGB: mib(81920), SMs: 108, InterconnectGBps: 300, InterconnectLatency: nvlinkLatency, PowerW: 400, IdlePowerW: 50},
	"h100":     {Name: "h100", TFLOPS: 989, FP8TFLOPS: 1979, BandwidthGBps: 3350, MemoryGB: mib(81559), SMs: 132, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency, PowerW: 700, IdlePowerW: 75},
	"h200":     {Name: "h200", TFLOPS: 989, FP8TFLOPS: 1979, BandwidthGBps: 4800, MemoryGB: mib(143771), SMs: 132, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency, PowerW: 700, IdlePowerW: 75},
	"h200-nvl": {Name: "h200-nvl", TFLOPS: 835.5, FP8TFLOPS: 1670.5, BandwidthGBps: 4800, MemoryGB: mib(143771), SMs: 132, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency, PowerW: 600, IdlePowerW: 60},
	"b200":     {Name: "b200", TFLOPS: 2250, FP8TFLOPS: 4500, FP4TFLOPS: 9000, BandwidthGBps: 7700, MemoryGB: mib(183359), SMs: 148, InterconnectGBps: 900, InterconnectLatency: nvlinkLatency, PowerW: 1000, IdlePowerW: 120},
	"l40s":     {Name: "l40s", TFLOPS: 362, FP8TFLOPS: 733, BandwidthGBps: 864, MemoryGB: mib(46068), SMs: 142, InterconnectGBps: 32, InterconnectLatency: pcieLatency, PowerW: 350, IdlePowerW: 35},

	"mi300x":       {Name: "mi300x", TFLOPS: 1307.4, FP8TFLOPS: 2614.9, BandwidthGBps: 5300, MemoryGB: 206.158430208, SMs: 304, InterconnectGBps: 448, InterconnectLatency: nvlinkLatency, PowerW: 750, IdlePowerW: 90},
	"mi325x":       {Name: "mi325x", TFLOPS: 1307.4, FP8TFLOPS: 2614.9, BandwidthGBps: 6000, MemoryGB: gib(256), SMs: 304, InterconnectGBps: 448, InterconnectLatency: nvlinkLatency, PowerW: 1000, IdlePowerW: 120},
	"mi355x":       {Name: "mi355x", TFLOPS: 2516.6, FP8TFLOPS: 5033.2, FP4TFLOPS: 10066.3, BandwidthGBps: 8000, MemoryGB: gib(288), SMs: 256, InterconnectGBps: 537.6, InterconnectLatency: nvlinkLatency, PowerW: 1400, IdlePowerW: 150},
	"gb200":        {Name: "gb200", TFLOPS: 2500, FP8TFLOPS: 5000, FP4TFLOPS: 10000, BandwidthGBps: 8000, MemoryGB: gib(186), SMs: 148, InterconnectGBps: 900, InterconnectLatency: nvlinkLatency, PowerW: 1200, IdlePowerW: 140},
	"b300":         {Name: "b300", TFLOPS: 2250, FP8TFLOPS: 4500, FP4TFLOPS: 13500, BandwidthGBps: 8000, MemoryGB: mib(275040), SMs: 160, InterconnectGBps: 900, InterconnectLatency: nvlinkLatency, PowerW: 1100, IdlePowerW: 130},
	"h20":          {Name: "h20", TFLOPS: 148, FP8TFLOPS: 296, BandwidthGBps: 4000, MemoryGB: gib(96), SMs: 78, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency, PowerW: 400, IdlePowerW: 50},
	"l4":           {Name: "l4", TFLOPS: 121, FP8TFLOPS: 242.5, BandwidthGBps: 300, MemoryGB: mib(23034), SMs: 58, InterconnectGBps: 32, InterconnectLatency: pcieLatency, PowerW: 72, IdlePowerW: 16},
	"a10g":         {Name: "a10g", TFLOPS: 125, BandwidthGBps: 600, MemoryGB: mib(23028), SMs: 72, InterconnectGBps: 32, InterconnectLatency: pcieLatency},
	"rtx-pro-6000": {Name: "rtx-pro-6000", TFLOPS: 503.8, FP8TFLOPS: 1007.6, FP4TFLOPS: 2015, BandwidthGBps: 1597, MemoryGB: mib(97887), SMs: 188, InterconnectGBps: 64, InterconnectLatency: pcieLatency, PowerW: 600, IdlePowerW: 60},
}

// checkedGPUs are the GPU presets some measurement has checked the roofline on: H200 (the
// measured step times of internal/sim/testdata/h200-llama-3.1-8b.json and
// /work/shared/calibration, and public-steps.json), H100 (public-steps.json,
// tp-measurements.json) and A100 (tp-measurements.json). Plan marks the others "not
// calibrated on this GPU": their figures are the datasheet's and the H200's efficiencies.
var checkedGPUs = map[string]bool{"h200": true, "h100": true, "a100": true}

// GPUChecked says whether some measurement has checked the roofline on the GPU preset name.
func GPUChecked(name string) bool { return checkedGPUs[name] }

// maxGPUPowerW bounds a GPU's stated power: ten times any board's today.
const maxGPUPowerW = 20000

const (
	nvlinkLatency = 10 * time.Microsecond
	pcieLatency   = 40 * time.Microsecond
)

// samePart says whether g and o are the same part by its datasheet figures (what the
// roofline reads), whatever their prices and interconnects.
func (g GPU) samePart(o GPU) bool {
	return g.Name == o.Name && g.TFLOPS == o.TFLOPS && g.BandwidthGBps == o.BandwidthGBps && g.MemoryGB == o.MemoryGB && g.SMs == o.SMs
}

// computeTFLOPS is the dense tensor rate of matmuls whose weights are elem bytes each:
// fp8's and fp4's (mxfp4, nvfp4) where the GPU has one, else bf16's, the rate every other
// precision dequantizes to (int4 and W8A16 kernels compute in bf16).
func (g GPU) computeTFLOPS(elem float64) float64 {
	switch {
	case elem == dtypeBytes[DtypeFP8] && g.FP8TFLOPS > 0:
		return g.FP8TFLOPS
	case g.fp4(elem):
		return g.FP4TFLOPS
	}
	return g.TFLOPS
}

// fp4 says whether matmuls of elem-byte weights run on g's fp4 tensor cores.
func (g GPU) fp4(elem float64) bool {
	return (elem == mxfp4Bytes || elem == nvfp4Bytes) && g.FP4TFLOPS > 0
}

// ModelPreset returns a built-in model shape by name.
func ModelPreset(name string) (ModelShape, bool) { m, ok := modelPresets[name]; return m, ok }

// GPUPreset returns a built-in GPU by name.
func GPUPreset(name string) (GPU, bool) { g, ok := gpuPresets[name]; return g, ok }

// ModelPresets lists the built-in model names, sorted.
func ModelPresets() []string { return sortedKeys(modelPresets) }

// GPUPresets lists the built-in GPU names, sorted.
func GPUPresets() []string { return sortedKeys(gpuPresets) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m ModelShape) bytesPerParam() float64 {
	if m.BytesPerParam > 0 {
		return m.BytesPerParam
	}
	return 2
}

// layerParams is the parameter count of one dense decoder layer: attention projections,
// gated MLP and two norms.
func (m ModelShape) layerParams() int64 {
	h := int64(m.Hidden)
	return m.attnParams() + 3*h*int64(m.Intermediate) + 2*h
}

// attnParams is one layer's attention projections: q, k, v and o, or MLA's low-rank ones
// (q_a, q_b or a direct q; kv_a to the latent and the rope key; kv_b from it to the heads'
// keys and values; o), their small norms not counted.
func (m ModelShape) attnParams() int64 {
	h := int64(m.Hidden)
	if m.KVLoraRank > 0 {
		heads, qk := int64(m.Heads), int64(m.QKNopeDim+m.QKRopeDim)
		q := h * heads * qk
		if m.QLoraRank > 0 {
			q = h*int64(m.QLoraRank) + int64(m.QLoraRank)*heads*qk
		}
		kvA := h * int64(m.KVLoraRank+m.QKRopeDim)
		kvB := int64(m.KVLoraRank) * heads * int64(m.QKNopeDim+m.VHeadDim)
		return q + kvA + kvB + heads*int64(m.VHeadDim)*h
	}
	q := h * int64(m.Heads*m.HeadDim)
	kv := 2 * h * int64(m.KVHeads*m.HeadDim)
	o := int64(m.Heads*m.HeadDim) * h
	return q + kv + o
}

// MoE reports whether m is a mixture of experts.
func (m ModelShape) MoE() bool { return m.Experts > 0 }

// ExpertParams is one routed expert's parameters (a gated MLP MoEIntermediate wide).
func (m ModelShape) ExpertParams() int64 { return 3 * int64(m.Hidden) * int64(m.MoEIntermediate) }

// moeLayers is the number of layers with an MoE block.
func (m ModelShape) moeLayers() int {
	if !m.MoE() {
		return 0
	}
	return m.MoELayers
}

// denseParams is every parameter but the routed experts', the embeddings excepted: the
// layers' attention, norms, dense MLPs, and the MoE blocks' shared experts and routers.
func (m ModelShape) denseParams() int64 {
	if !m.MoE() && m.KVLoraRank == 0 {
		return int64(m.Layers) * m.layerParams()
	}
	h := int64(m.Hidden)
	moe := int64(m.moeLayers())
	n := int64(m.Layers)*(m.attnParams()+2*h) + (int64(m.Layers)-moe)*3*h*int64(m.Intermediate)
	return n + moe*(3*h*int64(m.SharedIntermediate)+h*int64(m.Experts))
}

// routedParams is the routed experts' parameters, all of them (experts 0: none) or those
// experts chosen per token.
func (m ModelShape) routedParams(experts int) int64 {
	return int64(m.moeLayers()) * int64(experts) * m.ExpertParams()
}

// Params is the total parameter count (embeddings included).
func (m ModelShape) Params() int64 {
	emb := int64(m.Vocab) * int64(m.Hidden)
	n := m.denseParams() + m.routedParams(m.Experts) + emb + int64(m.Hidden) // + final norm
	if !m.TiedEmbeddings {
		n += emb
	}
	return n
}

// ActiveParams is the parameters one token computes with: Params with only the experts
// chosen per token.
func (m ModelShape) ActiveParams() int64 {
	return m.Params() - m.routedParams(m.Experts) + m.routedParams(m.ExpertsPerToken)
}

// MatmulParams is the parameters multiplied per token: every layer and the output
// projection, not the embedding lookup (a gather, not a matmul), and of the routed experts
// only those chosen per token.
func (m ModelShape) MatmulParams() int64 {
	return m.denseParams() + int64(m.Vocab)*int64(m.Hidden) + m.routedParams(m.ExpertsPerToken)
}

// WeightBytes is the size of the weights in memory.
func (m ModelShape) WeightBytes() float64 {
	if !m.MoE() {
		return float64(m.Params()) * m.bytesPerParam()
	}
	routed := m.routedParams(m.Experts)
	return float64(m.Params()-routed)*m.bytesPerParam() + float64(routed)*m.expertBytesPerParam()
}

func (m ModelShape) expertBytesPerParam() float64 {
	if m.ExpertBytesPerParam > 0 {
		return m.ExpertBytesPerParam
	}
	return m.bytesPerParam()
}

func (m ModelShape) kvBytesPerElem() float64 {
	if m.KVBytesPerElem > 0 {
		return m.KVBytesPerElem
	}
	return m.bytesPerParam()
}

// KVBytesPerToken is the KV cache per token: K and V for every layer's KV heads, or MLA's
// latent and rope key.
func (m ModelShape) KVBytesPerToken() float64 {
	if m.KVLoraRank > 0 {
		return float64(m.Layers*(m.KVLoraRank+m.QKRopeDim)) * m.kvBytesPerElem()
	}
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.kvBytesPerElem()
}

// attnDim is the FLOPs per query-key pair and head, halved: QK^T over the key width and
// AV over the value width.
func (m ModelShape) attnDim() int {
	if m.KVLoraRank > 0 {
		return (m.QKNopeDim + m.QKRopeDim + m.VHeadDim) / 2
	}
	return m.HeadDim
}

// Shard is the part of m that one GPU of a tensor-parallel group of tp holds and computes,
// as Megatron-style serving engines (vLLM, TensorRT-LLM) split it: each GPU has heads/tp
// query heads, kv_heads/tp KV heads (one replicated head when kv_heads < tp), an
// intermediate/tp slice of the MLP and a vocab/tp slice of the embeddings and output
// projection (rounded up: engines pad the vocabulary). The norms are replicated. The
// caller checks that tp divides heads; Shard(1) is m.
func (m ModelShape) Shard(tp int) ModelShape {
	if tp <= 1 {
		return m
	}
	s := m
	s.Heads = m.Heads / tp
	s.KVHeads = max(1, m.KVHeads/tp)
	s.Intermediate = ceilDiv(m.Intermediate, tp)
	s.Vocab = ceilDiv(m.Vocab, tp)
	return s.ShardExperts(tp)
}

// ShardExperts is m with its MoE blocks split over n GPUs: each expert's and the shared
// MLP's width divided by n (rounded up). Expert parallelism places whole experts instead,
// E/n on each GPU, which holds and reads the same bytes on average; the router is
// replicated. A dense model is unchanged.
func (m ModelShape) ShardExperts(n int) ModelShape {
	if n <= 1 || !m.MoE() {
		return m
	}
	m.MoEIntermediate = ceilDiv(m.MoEIntermediate, n)
	m.SharedIntermediate = ceilDiv(m.SharedIntermediate, n)
	return m
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// mib and gib are n MiB and n GiB in GB (10^9 bytes).
func mib(n float64) float64 { return n * (1 << 20) / 1e9 }
func gib(n float64) float64 { return n * (1 << 30) / 1e9 }

// Shape and GPU limits: far beyond any real model or accelerator, and small enough that
// parameter counts stay within int64 (at most about 4.3e17) and step times stay finite.
const (
	maxLayers    = 1_000
	maxHidden    = 1_000_000
	maxHeads     = 10_000     // heads, kv_heads, head_dim
	maxWidth     = 10_000_000 // intermediate, vocab
	maxGPUFigure = 1e6        // tflops, bandwidth_gbps, memory_gb
	maxSMs       = 1_000_000
	// maxUSDPerHour bounds gpu.usd_per_hour: a hundred times any GPU's list price.
	maxUSDPerHour = 10_000
)

// validate reports every problem with the shape at once; prefix names the YAML key.
func (m ModelShape) validate(prefix string) error {
	var errs []error
	// The table's model keys, named under prefix; bytes_per_param (1 bit to fp64, 0 the bf16
	// default) is reported after the parts.
	q := Profile{Model: m}
	check := func(k profileKey) {
		_, name := splitKey(k.Path)
		if err := k.check(&q, prefix+"."+name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range keysUnder("model") {
		if k.Must != "" && !k.ZeroOK {
			check(k)
		}
	}
	errs = append(errs, m.validateParts(prefix)...)
	if m.Heads > 0 && m.KVHeads > 0 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, keyErrorf(prefix+".kv_heads", "%d does not divide heads %d", m.KVHeads, m.Heads))
	}
	check(profileKeyIndex["model.bytes_per_param"])
	return errors.Join(errs...)
}

// validateParts checks the MoE, MLA and sliding-window fields (set by presets and config.json).
func (m ModelShape) validateParts(prefix string) []error {
	var errs []error
	bad := func(key, format string, a ...any) { errs = append(errs, keyErrorf(prefix+"."+key, format, a...)) }
	if m.Experts < 0 || m.Experts > maxWidth {
		bad("experts", "must be in 0..%d (0 = dense), got %d", maxWidth, m.Experts)
	} else if m.Experts > 0 {
		if m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.Experts {
			bad("experts_per_token", "must be in 1..%d (the experts), got %d", m.Experts, m.ExpertsPerToken)
		}
		if m.MoELayers < 1 || m.MoELayers > m.Layers {
			bad("moe_layers", "must be in 1..%d (the layers), got %d", m.Layers, m.MoELayers)
		}
		if m.MoEIntermediate < 1 || m.MoEIntermediate > maxWidth {
			bad("moe_intermediate", "must be in 1..%d, got %d", maxWidth, m.MoEIntermediate)
		}
		if m.SharedIntermediate < 0 || m.SharedIntermediate > maxWidth {
			bad("shared_intermediate", "must be in 0..%d, got %d", maxWidth, m.SharedIntermediate)
		}
	}
	if m.ExpertBytesPerParam != 0 && !(m.ExpertBytesPerParam >= 0.125 && m.ExpertBytesPerParam <= 8) {
		bad("expert_bytes_per_param", "must be in 0.125..8 (0 = bytes_per_param), got %g", m.ExpertBytesPerParam)
	}
	if m.KVBytesPerElem != 0 && !(m.KVBytesPerElem >= 0.125 && m.KVBytesPerElem <= 8) {
		bad("kv_bytes_per_elem", "must be in 0.125..8 (0 = bytes_per_param), got %g", m.KVBytesPerElem)
	}
	if m.KVLoraRank < 0 || m.KVLoraRank > maxWidth {
		bad("kv_lora_rank", "must be in 0..%d (0 = no MLA), got %d", maxWidth, m.KVLoraRank)
	} else if m.KVLoraRank > 0 {
		for _, f := range []struct {
			key string
			v   int
		}{{"qk_rope_head_dim", m.QKRopeDim}, {"qk_nope_head_dim", m.QKNopeDim}, {"v_head_dim", m.VHeadDim}} {
			if f.v < 1 || f.v > maxHeads {
				bad(f.key, "must be in 1..%d with MLA, got %d", maxHeads, f.v)
			}
		}
		if m.QLoraRank < 0 || m.QLoraRank > maxWidth {
			bad("q_lora_rank", "must be in 0..%d, got %d", maxWidth, m.QLoraRank)
		}
	}
	if m.SlidingLayers < 0 || m.SlidingLayers > m.Layers || (m.SlidingLayers > 0) != (m.SlidingWindow > 0) || m.SlidingWindow < 0 {
		bad("sliding_layers", "%d sliding-window layers of window %d: want 0..%d layers, with a window above 0 when there are any", m.SlidingLayers, m.SlidingWindow, m.Layers)
	}
	return errs
}

// validate reports every problem with the GPU at once, each naming its key under gpu.
func (g GPU) validate() error {
	var errs []error
	q := Profile{GPU: g}
	q.checkKeys(&errs, "gpu.tflops", "gpu.bandwidth_gbps", "gpu.memory_gb", "gpu.fp8_tflops", "gpu.fp4_tflops")
	switch {
	case !(g.PowerW >= 0 && g.PowerW <= maxGPUPowerW):
		errs = append(errs, keyErrorf("gpu.power_w", "must be a number in [0, %g] W (0 = not known: no power estimate), got %g", float64(maxGPUPowerW), g.PowerW))
	case !(g.IdlePowerW >= 0 && g.IdlePowerW <= g.PowerW) && !(g.PowerW == 0 && g.IdlePowerW == 0):
		errs = append(errs, keyErrorf("gpu.idle_power_w", "must be a number in [0, power_w %g] W, got %g", g.PowerW, g.IdlePowerW))
	}
	q.checkKeys(&errs, "gpu.sms", "gpu.usd_per_hour")
	// Set in code only (presets, or a profile's GPU built in Go): 0 is "unknown".
	if !(g.InterconnectGBps >= 0 && g.InterconnectGBps <= maxGPUFigure) {
		errs = append(errs, keyErrorf("gpu", "interconnect bandwidth must be in [0, %.0f] GB/s, got %g", float64(maxGPUFigure), g.InterconnectGBps))
	}
	if g.InterconnectLatency < 0 || g.InterconnectLatency > time.Second {
		errs = append(errs, keyErrorf("gpu", "interconnect latency must be in [0, 1s], got %v", g.InterconnectLatency))
	}
	return errors.Join(errs...)
}
