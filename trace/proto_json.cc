#include "trace/proto_json.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace understudy {
namespace trace {

std::string ToJson(const google::protobuf::Message& m, bool all_fields) {
  // Through the binary form, serialized deterministically (maps by key).
  static google::protobuf::util::TypeResolver* const resolver =
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          "type.googleapis.com", google::protobuf::DescriptorPool::generated_pool());
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = all_fields;
  std::string out;
  (void)google::protobuf::util::BinaryToJsonString(
      resolver, absl::StrCat("type.googleapis.com/", m.GetDescriptor()->full_name()), bytes, &out,
      options);
  return out;
}

}  // namespace trace
}  // namespace understudy
