#include <moeplan/parallel/rank_groups.hpp>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::parallel {
namespace {

std::vector<std::int64_t> prefix_product(const std::vector<std::int64_t>& a) {
  std::vector<std::int64_t> r{1};
  for (std::int64_t v : a) r.push_back(r.back() * v);
  return r;
}

std::vector<std::string> split_order(const std::string& order) {
  std::vector<std::string> out;
  std::stringstream in(order);
  for (std::string part; std::getline(in, part, '-');) out.push_back(part);
  return out;
}

[[noreturn]] void bad(const std::string& field, const std::string& reason) {
  throw_input_error("parallelism." + field, reason);
}

// Megatron's RankGenerator for one layer kind: dimension sizes by name, laid
// out in `order` (dimensions of size 1 the order leaves out go last).
class RankGenerator {
 public:
  RankGenerator(std::int64_t world, std::map<std::string, std::int64_t> sizes, const std::vector<std::string>& order)
      : world_(world) {
    for (const std::string& name : order) {
      names_.push_back(name);
      sizes_.push_back(sizes.at(name));
    }
    for (const auto& [name, size] : sizes)
      if (std::find(order.begin(), order.end(), name) == order.end()) {
        if (size != 1) bad("order", fmt::format("the order {} leaves out {} of size {}", quoted_for_error(join(order)), name, size));
        names_.push_back(name);
        sizes_.push_back(1);
      }
  }
  RankGroups groups(const std::vector<std::string>& dims, std::int64_t max_groups) const {
    std::vector<bool> mask;
    for (const std::string& n : names_) mask.push_back(std::find(dims.begin(), dims.end(), n) != dims.end());
    return masked_orthogonal_groups(world_, sizes_, mask, max_groups);
  }
  static std::string join(const std::vector<std::string>& order) {
    std::string s;
    for (const std::string& o : order) s += (s.empty() ? "" : "-") + o;
    return s;
  }

 private:
  std::int64_t world_;
  std::vector<std::string> names_;
  std::vector<std::int64_t> sizes_;
};

}  // namespace

RankGroups masked_orthogonal_groups(std::int64_t world, const std::vector<std::int64_t>& sizes,
                                    const std::vector<bool>& mask, std::int64_t max_groups) {
  std::vector<std::int64_t> masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  const std::vector<std::int64_t> global_stride = prefix_product(sizes);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    (mask[i] ? masked_shape : unmasked_shape).push_back(sizes[i]);
    (mask[i] ? masked_stride : unmasked_stride).push_back(global_stride[i]);
  }
  const std::vector<std::int64_t> masked_prefix = prefix_product(masked_shape);
  const std::vector<std::int64_t> unmasked_prefix = prefix_product(unmasked_shape);
  const std::int64_t group_size = masked_prefix.back();
  const std::int64_t groups = max_groups >= 0 ? std::min(max_groups, world / group_size) : world / group_size;
  // The rank of coordinate index `i` of a shape: sum over dimensions of
  // ((i / prefix[d]) % shape[d]) x stride[d] (Megatron's decompose, then the
  // dot product), without a vector per rank: groups of 2^20 ranks are priced.
  auto offset = [](std::int64_t index, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& prefix,
                   const std::vector<std::int64_t>& stride) {
    std::int64_t rank = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) rank += (index / prefix[d]) % shape[d] * stride[d];
    return rank;
  };
  RankGroups out;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t base = offset(g, unmasked_shape, unmasked_prefix, unmasked_stride);
    std::vector<std::int64_t> ranks(static_cast<std::size_t>(group_size));
    for (std::int64_t r = 0; r < group_size; ++r)
      ranks[static_cast<std::size_t>(r)] = base + offset(r, masked_shape, masked_prefix, masked_stride);
    out.push_back(std::move(ranks));
  }
  return out;
}

Mapping make_mapping(const MappingRequest& q) {
  for (auto [value, name] :
       {std::pair{q.world, "world"}, {q.tp, "tp"}, {q.cp, "cp"}, {q.pp, "pp"}, {q.ep, "ep"}, {q.vpp, "vpp"}})
    if (value < 1) bad(name, fmt::format("must be positive, got {}", value));
  Mapping m;
  m.etp = q.etp.value_or(q.tp);
  if (m.etp < 1) bad("etp", fmt::format("must be positive, got {}", m.etp));
  if (q.world % (q.tp * q.cp * q.pp) != 0)
    bad("dp", fmt::format("world {} is not divisible by tp*cp*pp = {}", q.world, q.tp * q.cp * q.pp));
  if (q.world % (m.etp * q.ep * q.pp) != 0)
    bad("edp", fmt::format("world {} is not divisible by etp*ep*pp = {}", q.world, m.etp * q.ep * q.pp));
  m.dp = q.world / (q.tp * q.cp * q.pp);
  m.edp = q.world / (m.etp * q.ep * q.pp);
  if (q.num_experts && *q.num_experts % q.ep != 0)
    bad("ep", fmt::format("num_experts {} is not divisible by ep {}", *q.num_experts, q.ep));
  if (q.vpp > 1 && q.pp == 1) bad("vpp", "virtual pipeline stages need pp > 1");
  const std::vector<std::string> order = split_order(q.order);
  for (std::size_t i = 0; i < order.size(); ++i) {
    static const std::vector<std::string> known{"tp", "cp", "ep", "dp", "pp"};
    if (std::find(known.begin(), known.end(), order[i]) == known.end())
      bad("order", fmt::format("unknown dimension {} in {} (tp, cp, ep, dp, pp)", quoted_for_error(order[i]),
                                quoted_for_error(q.order)));
    if (std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(i), order[i]) !=
        order.begin() + static_cast<std::ptrdiff_t>(i))
      bad("order", fmt::format("dimension {} appears twice in {}", quoted_for_error(order[i]), quoted_for_error(q.order)));
  }
  // Megatron: attention with ep = 1; experts with tp = etp, dp = edp, cp = 1.
  const RankGenerator attention(q.world, {{"tp", q.tp}, {"cp", q.cp}, {"ep", 1}, {"dp", m.dp}, {"pp", q.pp}}, order);
  const RankGenerator expert(q.world, {{"tp", m.etp}, {"cp", 1}, {"ep", q.ep}, {"dp", m.edp}, {"pp", q.pp}}, order);
  const std::int64_t limit = q.first_groups_only ? 1 : -1;
  m.attention["tp"] = attention.groups({"tp"}, limit);
  m.attention["cp"] = attention.groups({"cp"}, limit);
  m.attention["dp"] = attention.groups({"dp"}, limit);
  // Megatron's data-parallel group with context parallelism (get_ranks('dp-cp')):
  // CP ranks hold the same weights and see other tokens of the same samples, so
  // dense gradients are reduced and the distributed optimizer shards over it.
  m.attention["dp-cp"] = attention.groups({"dp", "cp"}, limit);
  m.attention["pp"] = attention.groups({"pp"}, limit);
  m.expert["etp"] = expert.groups({"tp"}, limit);
  m.expert["ep"] = expert.groups({"ep"}, limit);
  m.expert["edp"] = expert.groups({"dp"}, limit);
  m.expert["pp"] = expert.groups({"pp"}, limit);
  // Comparing the first pipeline groups is enough: a pipeline group is
  // {i + s k + s pp j : k < pp} with s the product of the sizes before pp in
  // the order, so both kinds' groups are the same partition exactly when their
  // strides s are equal, which group 0 ({0, s, 2s, ...}) shows.
  if (m.attention["pp"] != m.expert["pp"])
    bad("order", fmt::format("attention and expert pipeline groups differ under {}: the order must end in pp, or "
                             "pp must be 1, or edp must equal dp (edp {} vs dp {})",
                             quoted_for_error(q.order), m.edp, m.dp));
  return m;
}

}  // namespace moeplan::parallel
