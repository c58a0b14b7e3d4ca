// The Hugging Face config.json reader: one table row per model_type says how that family spells
// its layer counts, experts and attention layout, and how its checkpoint names the modules that a
// quantization_config's ignore list refers to. Private to the library; load_model() calls it.
// Key names and the facts behind each row: docs/references/models.md#config-keys.
#pragma once

#include <string>
#include <vector>

#include "specsim/model_spec.hpp"
#include "util/yaml_reader.hpp"

namespace specsim::detail {

// A config.json has no schema_version and names a model_type (possibly under text_config).
[[nodiscard]] bool looks_like_hf_config(const YamlReader& r);

// Reads config.json into a TransformerSpec: shape, per-part weight dtypes from
// quantization_config (or a sibling hf_quant_config.json written by NVIDIA ModelOpt), MTP modules,
// and the EAGLE head markers. Unknown families and quantization schemes are errors naming the key.
[[nodiscard]] TransformerSpec read_hf_config(YamlReader& root);

// The model_type values read_hf_config accepts, in table order (what its error lists).
[[nodiscard]] std::vector<std::string> hf_model_types();

}  // namespace specsim::detail
