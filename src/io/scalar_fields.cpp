#include "scalar_fields.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/utf8.hpp>

namespace moeplan::io {
namespace gpb = google::protobuf;

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

// A number's text is decimal and whole: strtoll and strtod would skip
// leading spaces, strtod read hexadecimal ("0x1p3"), and both stop at a NUL
// byte, which would take "2048\0garbage" for 2048.
bool plain_number_text(const std::string& value) {
  return !value.empty() && value.find_first_not_of("0123456789+-.eE") == std::string::npos;
}

std::int64_t parse_int(const std::string& path, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = plain_number_text(value) ? std::strtoll(value.c_str(), &end, 10) : 0;
  if (!plain_number_text(value) || end != value.c_str() + value.size() || errno == ERANGE)
    throw_input_error(path, fmt::format("expected an integer, got {}", quoted_for_error(value)));
  return v;
}

double parse_double(const std::string& path, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const double v = plain_number_text(value) ? std::strtod(value.c_str(), &end) : 0;
  if (!plain_number_text(value) || end != value.c_str() + value.size() || errno == ERANGE || !std::isfinite(v))
    throw_input_error(path, fmt::format("expected a number, got {}", quoted_for_error(value)));
  return v;
}

}  // namespace

namespace {

// "costs[3]" -> ("costs", "3"); "costs[*]" -> ("costs", "*"); "seq_len" -> ("seq_len", "").
std::pair<std::string, std::string> split_index(const std::string& path, const std::string& part) {
  const std::size_t open = part.find('[');
  if (open == std::string::npos) return {part, ""};
  if (part.back() != ']' || open == 0 || part.size() < open + 3)
    throw_input_error(path, fmt::format("malformed index in {} (expected name[N] or name[*])", quoted_for_error(part)));
  return {part.substr(0, open), part.substr(open + 1, part.size() - open - 2)};
}

void set_one(gpb::Message* message, const gpb::FieldDescriptor* field, const std::string& path,
             const std::string& value) {
  const gpb::Reflection* reflection = message->GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case gpb::FieldDescriptor::CPPTYPE_INT64: {
      const std::int64_t v = parse_int(path, value);
      repeated ? reflection->AddInt64(message, field, v) : reflection->SetInt64(message, field, v);
      break;
    }
    case gpb::FieldDescriptor::CPPTYPE_INT32: {
      const std::int64_t v = parse_int(path, value);
      if (v < INT32_MIN || v > INT32_MAX) throw_input_error(path, "out of range");
      repeated ? reflection->AddInt32(message, field, static_cast<std::int32_t>(v))
               : reflection->SetInt32(message, field, static_cast<std::int32_t>(v));
      break;
    }
    case gpb::FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = parse_double(path, value);
      repeated ? reflection->AddDouble(message, field, v) : reflection->SetDouble(message, field, v);
      break;
    }
    case gpb::FieldDescriptor::CPPTYPE_BOOL:
      if (value != "true" && value != "false")
        throw_input_error(path, fmt::format("expected true or false, got {}", quoted_for_error(value)));
      repeated ? reflection->AddBool(message, field, value == "true")
               : reflection->SetBool(message, field, value == "true");
      break;
    case gpb::FieldDescriptor::CPPTYPE_STRING:
      // The loader's rule for strings in files (proto_text.cpp) holds for --set and sweep values too.
      if (const std::size_t at = first_invalid_utf8(value); at != std::string::npos)
        throw_input_error(path, invalid_utf8_reason(value, at));
      repeated ? reflection->AddString(message, field, value) : reflection->SetString(message, field, value);
      break;
    case gpb::FieldDescriptor::CPPTYPE_ENUM: {
      const gpb::EnumValueDescriptor* e = field->enum_type()->FindValueByName(value);
      if (e == nullptr) throw_input_error(path, fmt::format("unknown value {}", quoted_for_error(value)));
      repeated ? reflection->AddEnum(message, field, e) : reflection->SetEnum(message, field, e);
      break;
    }
    default:
      throw_input_error(path, "unsupported field type");
  }
}

void set_in(gpb::Message* message, const std::vector<std::string>& parts, std::size_t i, const std::string& path,
            const std::string& value) {
  const auto [name, index] = split_index(path, parts[i]);
  const gpb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(name);
  if (field == nullptr)
    throw_input_error(path,
                      fmt::format("unknown field {} in {}", quoted_for_error(name), message->GetDescriptor()->name()));
  const gpb::Reflection* reflection = message->GetReflection();
  const bool last = i + 1 == parts.size();
  if (field->cpp_type() == gpb::FieldDescriptor::CPPTYPE_MESSAGE) {
    if (last) throw_input_error(path, "is a message; set one of its scalar fields");
    if (!field->is_repeated()) {
      if (!index.empty())
        throw_input_error(path, fmt::format("{} is not repeated; drop the index", quoted_for_error(name)));
      set_in(reflection->MutableMessage(message, field), parts, i + 1, path, value);
      return;
    }
    // A repeated message: one element (name[N]) or every element (name[*]).
    const int size = reflection->FieldSize(*message, field);
    if (index == "*") {
      for (int k = 0; k < size; ++k) set_in(reflection->MutableRepeatedMessage(message, field, k), parts, i + 1, path, value);
      return;
    }
    if (index.empty())
      throw_input_error(path, fmt::format("{} is repeated: say {}[N] or {}[*]", quoted_for_error(name), name, name));
    const std::int64_t k = parse_int(path, index);
    if (k < 0 || k >= size)
      throw_input_error(path, fmt::format("index {} is outside 0..{} ({} has {} entries)", k, size - 1, name, size));
    set_in(reflection->MutableRepeatedMessage(message, field, static_cast<int>(k)), parts, i + 1, path, value);
    return;
  }
  if (!last) throw_input_error(path, fmt::format("{} is a scalar and has no fields", quoted_for_error(name)));
  if (!index.empty())
    throw_input_error(path, fmt::format("{} takes its whole list: name=v1,v2,...", quoted_for_error(name)));
  if (!field->is_repeated()) {
    set_one(message, field, path, value);
    return;
  }
  // A repeated scalar takes a comma-separated list that replaces it.
  reflection->ClearField(message, field);
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, ',');) set_one(message, field, path, item);
}

}  // namespace

void set_scalar_field(gpb::Message& root, const std::string& path, const std::string& value) {
  // A NUL byte (which a sweep axis or a scenario's set: can hold, escaped as
  // \0) would end the text wherever it is later written as C text, a CSV cell
  // or a name: refused in the path and in the value alike.
  if (path.find('\0') != std::string::npos) throw_input_error("request.set", "a field path holds a NUL byte");
  if (value.find('\0') != std::string::npos) throw_input_error(path, "the value holds a NUL byte");
  const std::vector<std::string> parts = split_path(path);
  if (parts.empty()) throw_input_error(path, "empty field path");
  set_in(&root, parts, 0, path, value);
}

void clear_field(gpb::Message& root, const std::string& path) {
  const std::vector<std::string> parts = split_path(path);
  gpb::Message* message = &root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const gpb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    if (field == nullptr || (field->is_repeated() && i + 1 < parts.size()))
      throw_input_error(path, "not a field path of non-repeated messages");
    const gpb::Reflection* reflection = message->GetReflection();
    if (i + 1 == parts.size()) {
      reflection->ClearField(message, field);
      return;
    }
    if (field->cpp_type() != gpb::FieldDescriptor::CPPTYPE_MESSAGE) throw_input_error(path, "not a message path");
    if (!reflection->HasField(*message, field)) return;
    message = reflection->MutableMessage(message, field);
  }
}

void override_scalar_field(gpb::Message& scenario, const std::string& path, const std::string& value) {
  // What a model states in place of each field: setting one replaces the other.
  struct Alternative {
    const char* field;
    const char* value;  // only when set to this value; nullptr = any value
    std::vector<const char*> clears;
  };
  static const Alternative kAlternatives[] = {
      {"model.moe.dropless", "true", {"model.moe.capacity_factor"}},
      {"model.moe.capacity_factor", nullptr, {"model.moe.dropless"}},
      {"model.moe.expert_ffn_hidden", nullptr, {"model.moe.expert_ffn_hidden_scale"}},
      {"model.moe.expert_ffn_hidden_scale", nullptr, {"model.moe.expert_ffn_hidden"}},
      {"model.moe.moe_layers", nullptr,
       {"model.moe.moe_layer_interval", "model.moe.moe_layer_offset", "model.moe.first_k_dense"}},
      {"model.moe.first_k_dense", nullptr, {"model.moe.moe_layers"}},
      {"model.moe.moe_layer_interval", nullptr, {"model.moe.moe_layers"}},
      {"model.moe.moe_layer_offset", nullptr, {"model.moe.moe_layers"}},
  };
  for (const Alternative& a : kAlternatives)
    if (path == a.field && (a.value == nullptr || value == a.value))
      for (const char* other : a.clears) clear_field(scenario, other);
  set_scalar_field(scenario, path, value);
}

}  // namespace moeplan::io
