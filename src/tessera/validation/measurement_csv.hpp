#pragma once
// The measurement schema: a CSV file of times measured on real GPUs that `tessera validate`
// compares with the simulator. Each data row is one Measurement (measurement.hpp).
//
// Layout
//   - The first line that is not a comment is the header: column names, in any order.
//   - Lines starting with '#' are comments; blank lines are ignored.
//   - Cells are separated by commas; spaces and tabs around a cell are trimmed; a cell may be
//     quoted ("a,b", with "" for a quote inside).
//   - Only gpu, kind, value and unit must be in the header. The other columns are needed as the
//     rows' kinds need them; a column left out of the header is an empty cell in every row.
//   - An unknown column name is an error naming it and listing the known ones: a misspelt
//     column would otherwise silently read as "not applicable".
//   - A non-empty cell in a column that the row's kind (or phase) does not use is an error.
//
// Columns
//   gpu           always: a GPU of the hardware catalog, by name or alias (H100-SXM5-80GB).
//   kind          always: gemm | layer | step | collective.
//                   gemm        one GEMM C[m,n] = A[m,k] x B[k,n].
//                   layer       some kernels of one decoder layer (one GPU's shard), summed.
//                   step        a whole prefill or decode step of a model (one GPU's shard,
//                               collectives included).
//                   collective  a collective between GPUs.
//   value         always: the measured time, a finite positive number.
//   unit          always: ns | us | ms | s, the unit of value.
//   precision     gemm, layer, step: fp8 | bf16 | fp16 | tf32 | fp32; default bf16.
//   m, n, k       gemm, required: the GEMM's sizes (whole numbers >= 1).
//   model         layer, step: a model catalog key (llama-3-8b); its shapes are the defaults.
//   hidden, heads, kv_heads, head_dim, intermediate, vocab, layers
//                 layer, step: override the model's fields (whole numbers >= 1), or give a
//                 shape without a model: then hidden, heads, intermediate and vocab are
//                 required, kv_heads defaults to heads, head_dim to hidden / heads, and layers
//                 to 1 for layer rows (step rows without a model need layers). Weights and the
//                 KV cache of such a shape are 2 bytes an element.
//   tp            layer, step: GPUs the model is split over (tensor parallel); default 1.
//   phase         layer, step, required: prefill | decode.
//   batch         layer, step: sequences in the step; default 1.
//   seq_len       phase prefill, required: each prompt's length in tokens.
//   kv_len        phase decode, required: each sequence's cached tokens before the step (>= 0).
//   kernels       layer, required: '+'-separated kernel names as the simulator's builders name
//                 them (embedding, input_rmsnorm, qkv_proj, rotary_embedding, o_proj,
//                 post_attention_add_rmsnorm, gate_up_proj, silu_and_mul, down_proj,
//                 residual_add, final_rmsnorm, lm_head, sampling, flash_attention_prefill,
//                 paged_attention_v1, paged_attention_v2, paged_attention_v2_reduce; a mixture
//                 of experts: moe_router, moe_topk_softmax, moe_align_block_size, moe_gate_up,
//                 moe_down, moe_sum), or @attention for whatever attention kernels the step uses.
//   implementation layer, step: vllm | hf-eager (Hugging Face eager modules); default vllm.
//   gemm_stream_k gemm, layer, step: true | false, whether the measured GEMM library has
//                 Stream-K kernels (no wave staircase: sim_gpu_options.hpp); default the
//                 simulator's setting.
//   collective    collective, required: all_reduce | send_recv.
//   bytes         collective, required: the message size in bytes.
//   gpus          collective, required: GPUs taking part (>= 2).
//   interconnect  collective, required: nvswitch (a DGX) | nvlink-pairwise.
//
// Example
//   gpu,kind,m,n,k,model,phase,seq_len,kernels,value,unit
//   # one GEMM and the QKV projection of llama-3-8b on a 512-token prompt
//   H100-SXM5-80GB,gemm,4096,4096,4096,,,,,0.162,ms
//   H100-SXM5-80GB,layer,,,,llama-3-8b,prefill,512,qkv_proj,41.3,us
//
// Errors name the place: "FILE:LINE: column 'x': what is wrong". A time that is zero, negative
// or not finite is an error here (unlike the shared profiles, where such rows are skipped), and
// so is a size beyond limits.hpp's.

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/validation/measurement.hpp"

namespace tessera::validation {

// Reads PATH in the measurement schema; the rows' sources are "PATH:LINE". No exception leaves
// it; `skipped` stays empty (every row is either used or an error).
core::Result<MeasurementSet> read_measurement_csv(const std::string& path);
// The same for TEXT already in memory, its rows' sources "SOURCE:LINE".
core::Result<MeasurementSet> parse_measurement_csv(std::string_view text,
                                                   const std::string& source);

}  // namespace tessera::validation
