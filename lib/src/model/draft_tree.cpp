#include "specsim/draft_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>

#include "specsim/error.hpp"

namespace specsim {

namespace {

constexpr double kRowSumSlack = 1e-9;  // rows measured as frequencies may sum to 1 + rounding
constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
constexpr int kBruteForceMaxNodes = 12;

std::string num(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

PositionalAcceptance PositionalAcceptance::uniform(std::vector<double> p) {
  PositionalAcceptance out;
  out.rows.push_back(std::move(p));
  return out;
}

PositionalAcceptance PositionalAcceptance::chain(std::span<const double> conditional) {
  PositionalAcceptance out;
  for (double b : conditional) out.rows.push_back({b});
  if (out.rows.empty()) out.rows.push_back({});
  return out;
}

double PositionalAcceptance::at(int depth, int rank) const {
  if (rows.empty() || depth < 1 || rank < 1) return 0.0;
  const auto& row = rows[std::min<std::size_t>(depth - 1, rows.size() - 1)];
  return rank <= static_cast<int>(row.size()) ? row[rank - 1] : 0.0;
}

int PositionalAcceptance::max_rank() const {
  std::size_t r = 0;
  for (const auto& row : rows) r = std::max(r, row.size());
  return static_cast<int>(r);
}

void PositionalAcceptance::validate() const {
  std::vector<std::string> problems;
  if (rows.empty()) problems.push_back("positional acceptance has no rows: give at least p_1");
  for (std::size_t d = 0; d < rows.size(); ++d) {
    double sum = 0.0;
    for (std::size_t k = 0; k < rows[d].size(); ++k) {
      const double v = rows[d][k];
      if (!(v >= 0.0 && v <= 1.0)) {
        problems.push_back("p[depth " + std::to_string(d + 1) + "][rank " + std::to_string(k + 1) +
                           "] = " + num(v) + ": must lie in [0, 1]");
      }
      sum += v;
    }
    if (sum > 1.0 + kRowSumSlack) {
      problems.push_back("p[depth " + std::to_string(d + 1) + "] sums to " + num(sum) +
                         ": must be <= 1 (at most one sibling is accepted)");
    }
  }
  if (!problems.empty()) throw Error(join(problems));
}

DraftTree::DraftTree() : parent_{-1}, rank_{0}, depth_{0}, children_(1) {}

DraftTree DraftTree::chain(int num_draft_tokens) {
  if (num_draft_tokens < 0) {
    throw Error("chain length = " + std::to_string(num_draft_tokens) + ": must be >= 0");
  }
  DraftTree tree;
  for (int i = 0; i < num_draft_tokens; ++i) tree.add_child(i);
  return tree;
}

DraftTree DraftTree::from_paths(const std::vector<std::vector<int>>& paths) {
  DraftTree tree;
  std::map<std::vector<int>, int> node_of{{{}, 0}};
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const auto& path = paths[i];
    const std::string where = "tree path " + std::to_string(i + 1);
    if (path.empty()) throw Error(where + " is empty: the root is implicit");
    if (node_of.count(path)) throw Error(where + " repeats an earlier path");
    const std::vector<int> parent_path(path.begin(), path.end() - 1);
    const auto parent = node_of.find(parent_path);
    if (parent == node_of.end()) throw Error(where + ": its parent path must come earlier");
    const int expected_rank = static_cast<int>(tree.children(parent->second).size());
    if (path.back() != expected_rank) {
      throw Error(where + ": child index " + std::to_string(path.back()) + ", expected " +
                  std::to_string(expected_rank) + " (siblings are listed in rank order from 0)");
    }
    node_of[path] = tree.add_child(parent->second);
  }
  return tree;
}

int DraftTree::add_child(int parent) {
  if (parent < 0 || parent >= size()) {
    throw Error("draft tree: parent " + std::to_string(parent) + " does not exist (tree has " +
                std::to_string(size()) + " nodes)");
  }
  const int node = size();
  parent_.push_back(parent);
  rank_.push_back(static_cast<int>(children_[parent].size()) + 1);
  depth_.push_back(depth_[parent] + 1);
  children_[parent].push_back(node);
  children_.emplace_back();
  return node;
}

int DraftTree::max_depth() const { return *std::max_element(depth_.begin(), depth_.end()); }

std::vector<std::vector<int>> DraftTree::to_paths() const {
  std::vector<std::vector<int>> paths(size());
  for (int v = 1; v < size(); ++v) {  // parents precede children, so paths[parent] is ready
    paths[v] = paths[parent_[v]];
    paths[v].push_back(rank_[v] - 1);
  }
  paths.erase(paths.begin());
  return paths;
}

std::string DraftTree::to_string() const {
  std::string out = "[";
  bool first = true;
  for (const auto& path : to_paths()) {
    out += first ? "(" : ", (";
    first = false;
    for (std::size_t i = 0; i < path.size(); ++i) {
      out += std::to_string(path[i]) + (path.size() == 1 ? "," : (i + 1 < path.size() ? ", " : ""));
    }
    out += ")";
  }
  return out + "]";
}

std::vector<double> node_scores(const DraftTree& tree, const PositionalAcceptance& p) {
  std::vector<double> f(tree.size(), 1.0);
  for (int v = 1; v < tree.size(); ++v) {
    f[v] = f[tree.parent(v)] * p.at(tree.depth(v), tree.rank(v));
  }
  return f;
}

double expected_tokens(const DraftTree& tree, const PositionalAcceptance& p) {
  const auto f = node_scores(tree, p);
  return std::accumulate(f.begin(), f.end(), 0.0);
}

namespace {

// Candidates SGLang scores: topk at the first step, topk^2 at each further one.
std::int64_t sglang_candidates(int steps, int topk) {
  return topk + static_cast<std::int64_t>(steps - 1) * topk * static_cast<std::int64_t>(topk);
}

// The tree's draft-token count (root included), after checking the parameters and that ranked
// children never gain acceptance with rank.
int checked_sglang_draft_tokens(const DraftShape& shape, const PositionalAcceptance& p) {
  p.validate();
  if (const auto problems = draft_shape_problems(shape); !problems.empty()) throw Error(join(problems));
  const int steps = shape.num_steps;
  const int topk = shape.eagle_topk;
  for (int d = 1; d <= steps; ++d) {
    for (int k = 2; k <= topk; ++k) {
      if (p.at(d, k) > p.at(d, k - 1)) {
        throw Error("p[depth " + std::to_string(d) + "][rank " + std::to_string(k) + "] = " +
                    num(p.at(d, k)) + " > p[rank " + std::to_string(k - 1) + "] = " +
                    num(p.at(d, k - 1)) + ": ranked children must not gain acceptance with rank");
      }
    }
  }
  return shape.verified_tokens();
}

}  // namespace

long long max_draft_tokens(int num_steps, int eagle_topk) {
  if (eagle_topk <= 1) return num_steps + 1LL;
  return 1 + sglang_candidates(num_steps, eagle_topk);
}

std::string num_draft_tokens_problem(const DraftShape& shape) {
  if (shape.num_steps < 1 || shape.eagle_topk <= 1) return "";  // a chain verifies num_steps + 1
  const long long most = max_draft_tokens(shape.num_steps, shape.eagle_topk);
  if (shape.num_draft_tokens >= 2 && shape.num_draft_tokens <= most) return "";
  return "= " + std::to_string(shape.num_draft_tokens) + ": must lie in [2, 1 + topk + (num_steps - 1) * topk^2] = [2, " +
         std::to_string(most) + "] for num_steps = " + std::to_string(shape.num_steps) + ", eagle_topk = " +
         std::to_string(shape.eagle_topk) + " (SGLang verifies the root and num_draft_tokens - 1 of that many candidates)";
}

std::vector<std::string> draft_shape_problems(const DraftShape& shape) {
  std::vector<std::string> out;
  if (shape.num_steps < 1) out.push_back("speculation.num_steps = " + std::to_string(shape.num_steps) + ": must be >= 1");
  if (shape.eagle_topk < 1) {
    out.push_back("speculation.eagle_topk = " + std::to_string(shape.eagle_topk) + ": must be >= 1");
  }
  if (std::string p = num_draft_tokens_problem(shape); !p.empty()) out.push_back("speculation.num_draft_tokens " + p);
  return out;
}

DraftTree sglang_tree(const DraftShape& shape, const PositionalAcceptance& p) {
  const int draft_tokens = checked_sglang_draft_tokens(shape, p);
  const int steps = shape.num_steps;
  const int topk = shape.eagle_topk;
  const std::int64_t candidates_total = sglang_candidates(steps, topk);

  struct Candidate {
    int parent;  // candidate index, -1 for the root
    double score;
  };
  std::vector<Candidate> cand;
  cand.reserve(static_cast<std::size_t>(candidates_total));
  std::vector<int> frontier;
  for (int k = 1; k <= topk; ++k) {
    frontier.push_back(static_cast<int>(cand.size()));
    cand.push_back({-1, p.at(1, k)});
  }
  // Highest score first, earlier index on ties.
  const auto better = [&](int a, int b) {
    return cand[a].score > cand[b].score || (cand[a].score == cand[b].score && a < b);
  };
  for (int step = 2; step <= steps; ++step) {
    std::vector<int> expanded;
    for (int f : frontier) {
      for (int k = 1; k <= topk; ++k) {
        expanded.push_back(static_cast<int>(cand.size()));
        cand.push_back({f, cand[f].score * p.at(step, k)});
      }
    }
    std::partial_sort(expanded.begin(), expanded.begin() + topk, expanded.end(), better);
    frontier.assign(expanded.begin(), expanded.begin() + topk);
  }
  std::vector<int> order(cand.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + (draft_tokens - 1), order.end(), better);
  order.resize(draft_tokens - 1);
  std::sort(order.begin(), order.end());

  DraftTree tree;
  std::vector<int> node_of(cand.size(), -1);
  for (int c : order) {
    const int parent_node = cand[c].parent < 0 ? 0 : node_of[cand[c].parent];
    if (parent_node < 0) {
      // Cannot happen: a parent scores at least as high as its child and comes earlier.
      throw Error("internal: SGLang tree candidate " + std::to_string(c) + " kept without parent");
    }
    node_of[c] = tree.add_child(parent_node);
  }
  return tree;
}

namespace {

// The Sequoia DP for one depth bound. T[n][d][b] as in the header; choice[n][d][b] = m, the size
// of the b-th child's subtree.
struct SequoiaDp {
  int budget, depth_bound, width;
  std::vector<double> t;
  std::vector<int> choice;
  std::vector<double> g;      // G[n][d]
  std::vector<int> g_branch;  // argmax_b

  std::size_t idx(int n, int d, int b) const {
    return (static_cast<std::size_t>(n) * (depth_bound + 1) + d) * (width + 1) + b;
  }
  std::size_t gidx(int n, int d) const { return static_cast<std::size_t>(n) * (depth_bound + 1) + d; }

  SequoiaDp(const PositionalAcceptance& p, int n_max, int d_max)
      : budget(n_max), depth_bound(d_max), width(p.max_rank()) {
    t.assign(idx(budget + 1, 0, 0), kMinusInf);
    choice.assign(t.size(), 0);
    g.assign(gidx(budget + 1, 0), kMinusInf);
    g_branch.assign(g.size(), 0);
    for (int d = depth_bound; d >= 0; --d) {
      t[idx(1, d, 0)] = 1.0;
      for (int n = 2; n <= budget && d < depth_bound; ++n) {
        for (int b = 1; b <= std::min(width, n - 1); ++b) {
          const double pb = p.at(d + 1, b);
          double best = kMinusInf;
          int best_m = 0;
          for (int m = 1; m <= n - 1; ++m) {
            const double rest = t[idx(n - m, d, b - 1)];
            const double sub = g[gidx(m, d + 1)];
            if (rest == kMinusInf || sub == kMinusInf) continue;
            const double v = rest + pb * sub;
            if (v > best) {
              best = v;
              best_m = m;
            }
          }
          t[idx(n, d, b)] = best;
          choice[idx(n, d, b)] = best_m;
        }
      }
      for (int n = 1; n <= budget; ++n) {
        for (int b = 0; b <= width; ++b) {
          if (t[idx(n, d, b)] > g[gidx(n, d)]) {
            g[gidx(n, d)] = t[idx(n, d, b)];
            g_branch[gidx(n, d)] = b;
          }
        }
      }
    }
  }

  void build(DraftTree& tree, int node, int n, int d) const {
    int b = g_branch[gidx(n, d)];
    std::vector<int> sizes(b);
    for (int left = n; b > 0; --b) {
      const int m = choice[idx(left, d, b)];
      sizes[b - 1] = m;
      left -= m;
    }
    std::vector<int> kids;
    for (std::size_t i = 0; i < sizes.size(); ++i) kids.push_back(tree.add_child(node));
    for (std::size_t i = 0; i < sizes.size(); ++i) build(tree, kids[i], sizes[i], d + 1);
  }
};

void check_search_limits(const PositionalAcceptance& p, int node_budget, int max_depth) {
  p.validate();
  std::vector<std::string> problems;
  if (node_budget < 1) {
    problems.push_back("node budget = " + std::to_string(node_budget) + ": must be >= 1 (the root)");
  }
  if (max_depth < 0) problems.push_back("max depth = " + std::to_string(max_depth) + ": must be >= 0");
  if (!problems.empty()) throw Error(join(problems));
}

}  // namespace

OptimalTree sequoia_optimal_tree(const PositionalAcceptance& p, int node_budget, int max_depth) {
  check_search_limits(p, node_budget, max_depth);
  const SequoiaDp dp(p, node_budget, max_depth);
  // The smallest tree reaching the best value (extra nodes of probability 0 add nothing).
  int best_n = 1;
  for (int n = 2; n <= node_budget; ++n) {
    if (dp.g[dp.gidx(n, 0)] > dp.g[dp.gidx(best_n, 0)]) best_n = n;
  }
  OptimalTree out;
  dp.build(out.tree, 0, best_n, 0);
  out.expected_tokens = dp.g[dp.gidx(best_n, 0)];
  return out;
}

std::vector<std::vector<double>> sequoia_value_table(const PositionalAcceptance& p, int max_budget,
                                                     int max_depth) {
  check_search_limits(p, max_budget, max_depth);
  std::vector<std::vector<double>> table(max_budget + 1, std::vector<double>(max_depth + 1, 0.0));
  for (int depth = 0; depth <= max_depth; ++depth) {
    const SequoiaDp dp(p, max_budget, depth);
    double best = kMinusInf;
    for (int n = 1; n <= max_budget; ++n) {
      best = std::max(best, dp.g[dp.gidx(n, 0)]);
      table[n][depth] = best;
    }
  }
  return table;
}

namespace {

// Ordered trees as balanced-parenthesis strings, "(" + children + ")", memoised by limits.
class TreeEnumerator {
 public:
  explicit TreeEnumerator(int max_width) : max_width_(max_width) {}

  const std::vector<std::string>& trees(int n, int depth) {
    const auto key = std::make_tuple(n, depth, -1);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::vector<std::string> out;
    if (n == 1) {
      out.push_back("()");
    } else if (depth > 0) {
      for (const auto& f : forests(n - 1, depth - 1, max_width_)) out.push_back("(" + f + ")");
    }
    return memo_[key] = std::move(out);
  }

  const std::vector<std::string>& forests(int n, int depth, int width) {
    const auto key = std::make_tuple(n, depth, width);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::vector<std::string> out;
    if (n == 0) {
      out.push_back("");
    } else if (width > 0) {
      for (int first = 1; first <= n; ++first) {
        const auto& heads = trees(first, depth);
        if (heads.empty()) continue;
        const auto& tails = forests(n - first, depth, width - 1);
        for (const auto& h : heads) {
          for (const auto& t : tails) out.push_back(h + t);
        }
      }
    }
    return memo_[key] = std::move(out);
  }

 private:
  int max_width_;
  std::map<std::tuple<int, int, int>, std::vector<std::string>> memo_;
};

DraftTree tree_from_parentheses(const std::string& s) {
  DraftTree tree;
  std::vector<int> stack;
  for (char c : s) {
    if (c == '(') {
      stack.push_back(stack.empty() ? 0 : tree.add_child(stack.back()));
    } else {
      stack.pop_back();
    }
  }
  return tree;
}

}  // namespace

OptimalTree brute_force_optimal_tree(const PositionalAcceptance& p, int node_budget, int max_depth) {
  check_search_limits(p, node_budget, max_depth);
  if (node_budget > kBruteForceMaxNodes) {
    throw Error("brute force over trees: node budget = " + std::to_string(node_budget) +
                ": must be <= " + std::to_string(kBruteForceMaxNodes) + " (Catalan growth)");
  }
  // Every ordered tree: children past p's last rank score 0 but are still enumerated.
  TreeEnumerator enumerate(node_budget);
  OptimalTree best;
  best.expected_tokens = 1.0;
  for (int n = 2; n <= node_budget; ++n) {
    for (const auto& s : enumerate.trees(n, max_depth)) {
      DraftTree tree = tree_from_parentheses(s);
      const double value = expected_tokens(tree, p);
      if (value > best.expected_tokens) best = {std::move(tree), value};
    }
  }
  return best;
}

std::int64_t count_trees(int node_budget, int max_depth, int max_width) {
  TreeEnumerator enumerate(max_width);
  std::int64_t count = 0;
  for (int n = 1; n <= node_budget; ++n) count += enumerate.trees(n, max_depth).size();
  return count;
}

}  // namespace specsim
