#include "store/proto_utf8.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/wire_format_lite.h"
#include "validation/utf8.h"

namespace understudy {
namespace store {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// Protobuf's own limit on nested messages.
constexpr int kMaxDepth = 100;

std::optional<std::string> Find(const Message& m, const std::string& prefix, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string path = prefix.empty() ? f->name() : absl::StrCat(prefix, ".", f->name());
    if (f->is_map()) {
      // Entries: key and value; the path names the entry by its key.
      const FieldDescriptor* key = f->message_type()->map_key();
      const FieldDescriptor* value = f->message_type()->map_value();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(m, f, i);
        const Reflection* er = entry.GetReflection();
        std::string k;
        if (key->type() == FieldDescriptor::TYPE_STRING) {
          k = er->GetString(entry, key);
          if (!validation::IsValidUtf8(k)) return absl::StrCat(path, " (a key)");
        }
        const std::string entry_path = absl::StrCat(path, "[\"", validation::SanitizeUtf8(k), "\"]");
        if (value->type() == FieldDescriptor::TYPE_STRING &&
            !validation::IsValidUtf8(er->GetString(entry, value))) {
          return entry_path;
        }
        if (value->type() == FieldDescriptor::TYPE_MESSAGE) {
          if (auto found = Find(er->GetMessage(entry, value), entry_path, depth + 1)) return found;
        }
      }
      continue;
    }
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          if (!validation::IsValidUtf8(r->GetRepeatedString(m, f, i))) {
            return absl::StrCat(path, "[", i, "]");
          }
        }
      } else if (!validation::IsValidUtf8(r->GetString(m, f))) {
        return path;
      }
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          if (auto found = Find(r->GetRepeatedMessage(m, f, i), absl::StrCat(path, "[", i, "]"),
                                depth + 1)) {
            return found;
          }
        }
      } else if (auto found = Find(r->GetMessage(m, f), path, depth + 1)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

// Copies the wire-format `in` (a message of type `d`) to `out`, replacing
// ill-formed UTF-8 in every string field by U+FFFD. False when `in` is not
// well-formed wire format.
bool Repair(CodedInputStream* in, const Descriptor* d, CodedOutputStream* out, int depth) {
  if (depth > kMaxDepth) return false;
  while (true) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return true;  // end of input (or of a limit)
    const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    const FieldDescriptor* f = d != nullptr ? d->FindFieldByNumber(number) : nullptr;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t v;
        if (!in->ReadVarint64(&v)) return false;
        out->WriteTag(tag);
        out->WriteVarint64(v);
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED64: {
        uint64_t v;
        if (!in->ReadLittleEndian64(&v)) return false;
        out->WriteTag(tag);
        out->WriteLittleEndian64(v);
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED32: {
        uint32_t v;
        if (!in->ReadLittleEndian32(&v)) return false;
        out->WriteTag(tag);
        out->WriteLittleEndian32(v);
        break;
      }
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length;
        if (!in->ReadVarint32(&length) || length > INT32_MAX) return false;
        if (f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE) {
          std::string inner;
          {
            google::protobuf::io::StringOutputStream sink(&inner);
            CodedOutputStream inner_out(&sink);
            const CodedInputStream::Limit limit = in->PushLimit(static_cast<int>(length));
            if (!Repair(in, f->message_type(), &inner_out, depth + 1)) return false;
            if (in->BytesUntilLimit() != 0) return false;
            in->PopLimit(limit);
          }
          out->WriteTag(tag);
          out->WriteVarint32(static_cast<uint32_t>(inner.size()));
          out->WriteString(inner);
          break;
        }
        std::string bytes;
        if (!in->ReadString(&bytes, static_cast<int>(length))) return false;
        if (f != nullptr && f->type() == FieldDescriptor::TYPE_STRING) {
          bytes = validation::SanitizeUtf8(bytes);
        }
        out->WriteTag(tag);
        out->WriteVarint32(static_cast<uint32_t>(bytes.size()));
        out->WriteString(bytes);
        break;
      }
      default:
        return false;  // groups are not used; anything else is corrupt
    }
  }
}

}  // namespace

std::optional<std::string> FindInvalidUtf8Field(const Message& message) {
  return Find(message, "", 0);
}

absl::Status ParseStored(absl::string_view bytes, Message* out, bool* repaired) {
  if (repaired != nullptr) *repaired = false;
  if (out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return absl::OkStatus();
  std::string fixed;
  bool ok;
  {
    CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                        static_cast<int>(bytes.size()));
    google::protobuf::io::StringOutputStream sink(&fixed);
    CodedOutputStream fixed_out(&sink);
    // ReadTag answers 0 at the end and on a malformed tag alike; only the
    // end counts.
    ok = Repair(&in, out->GetDescriptor(), &fixed_out, 0) && in.ConsumedEntireMessage();
  }
  out->Clear();
  if (!ok || !out->ParseFromString(fixed)) {
    return absl::DataLossError(
        absl::StrCat("stored ", out->GetDescriptor()->name(), " does not parse"));
  }
  if (repaired != nullptr) *repaired = true;
  return absl::OkStatus();
}

}  // namespace store
}  // namespace understudy
