// The draft of `speculation.method: mtp`, built from the target's shape (model_spec.hpp). The module
// is priced by the same equations as any draft: one decoder layer plus a head, here eh_proj and the
// target's full LM head. Its structure: DeepSeek-V3 report Sec. 2.2, SGLang deepseek_nextn.py and
// vLLM deepseek_mtp.py (docs/references/mtp.md#module).
#include <string>

#include "specsim/error.hpp"
#include "specsim/model_spec.hpp"

namespace specsim {

namespace {
// enorm, hnorm and eh_proj run before the decoder layer: one kernel each (deepseek_nextn.py).
constexpr int kMtpInputKernels = 3;
}  // namespace

TransformerSpec mtp_draft(const TransformerSpec& target) {
  if (target.eagle3 || target.mtp_module) {
    throw Error("'" + target.name + "' is a draft head, not a model with multi-token-prediction layers");
  }
  if (target.mtp_layers < 1) {
    throw Error("'" + target.name + "'" + (target.file.empty() ? "" : " (" + target.file + ")") +
                " has no multi-token-prediction layers (mtp_layers 0; num_nextn_predict_layers or mtp_num_hidden_layers in a HF config)");
  }
  TransformerSpec d = target;  // widths, attention, experts, dtypes, collectives and kernels as the target's
  d.name = target.name + "-mtp";
  d.description = "the multi-token-prediction module of " + target.name + ", drafting for it";
  d.layers = 1;                      // one module per forward, whichever step it drafts
  d.dense_layers = target.moe ? 0 : 1;  // an MoE target's module has an MoE layer
  d.layer_attention = {};            // the module's layer attends to the whole context
  d.attention.index_layers = 0;      // and runs its own indexer (vLLM builds one on every MTP layer)
  d.kernels.per_forward += kMtpInputKernels;
  d.mtp_layers = 0;
  if (target.mtp_weights) d.weights = *target.mtp_weights;
  d.mtp_weights.reset();
  d.mtp_module = MtpModuleSpec{target.name, target.mtp_layers};
  return d;
}

}  // namespace specsim
