#pragma once
// Private to src/interop: the attribute names moeplan writes into Chakra
// nodes and reads back, and helpers on the generated ChakraProtoMsg classes
// (proto/chakra/et_def.proto). Protobuf types stay out of public headers.

#include <cstdint>
#include <optional>
#include <string>

#include "et_def.pb.h"

namespace moeplan::interop::attr {

// Chakra's own names, as ASTRA-sim's ETFeederNode reads them.
inline constexpr const char* kIsCpuOp = "is_cpu_op";
inline constexpr const char* kNumOps = "num_ops";
/// uint64 bytes a compute node moves: what ASTRA-sim's roofline divides num_ops by.
inline constexpr const char* kTensorSize = "tensor_size";
inline constexpr const char* kCommType = "comm_type";
inline constexpr const char* kCommSize = "comm_size";
inline constexpr const char* kCommSrc = "comm_src";
inline constexpr const char* kCommDst = "comm_dst";
inline constexpr const char* kCommTag = "comm_tag";
inline constexpr const char* kCommPriority = "comm_priority";
inline constexpr const char* kPgName = "pg_name";
/// The CUDA stream of a GPU operation, as Chakra's PyTorch converter writes it.
inline constexpr const char* kStream = "stream";

// moeplan's own, which other readers keep as attributes they do not know.
inline constexpr const char* kDurationMs = "moeplan_duration_ms";  ///< double: the exact duration
inline constexpr const char* kCommBytes = "moeplan_comm_bytes";    ///< double: bytes, when not whole
inline constexpr const char* kGroupSize = "moeplan_group_size";    ///< ranks the collective was priced for
inline constexpr const char* kOp = "moeplan_op";                   ///< model::OpClass name of a compute task
inline constexpr const char* kPhase = "moeplan_phase";             ///< forward, backward
inline constexpr const char* kLayer = "moeplan_layer";
inline constexpr const char* kMicroBatch = "moeplan_micro_batch";
// GlobalMetadata.
inline constexpr const char* kVersion = "moeplan_version";
inline constexpr const char* kScenario = "moeplan_scenario";
inline constexpr const char* kSchedule = "moeplan_schedule";
inline constexpr const char* kRank = "moeplan_rank";
inline constexpr const char* kRanks = "moeplan_ranks";
/// Written by moeplan before issue 29 on graphs whose ranks stood for others; read, no longer written.
inline constexpr const char* kRepresentative = "moeplan_representative";
/// string "astra-sim": comm_size follows ASTRA-sim (an all-gather's is each
/// rank's input). moeplan's files without it (written before issue 29) hold an
/// all-gather's nccl-tests size (its output) in comm_size.
inline constexpr const char* kCommSizeConvention = "moeplan_comm_size";
inline constexpr const char* kAstraSimConvention = "astra-sim";
/// string_list: "NAME:POLICY" of each stream, indexed by the nodes' `stream` values.
inline constexpr const char* kStreams = "moeplan_streams";

template <typename Message>
ChakraProtoMsg::AttributeProto& add(Message& m, const char* name) {
  ChakraProtoMsg::AttributeProto& a = *m.add_attr();
  a.set_name(name);
  return a;
}

}  // namespace moeplan::interop::attr
