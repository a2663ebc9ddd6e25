#include "mcpserver/arguments.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "validation/problems.h"
#include "validation/suggest.h"

namespace understudy {
namespace mcpserver {
namespace {

using nlohmann::json;

bool HasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer() || value.is_number_unsigned();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return true;  // an unknown type name constrains nothing
}

std::string Describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::string: {
      std::string s = value.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return absl::StrCat("the string ", json(s).dump(-1, ' ', false, json::error_handler_t::replace));
    }
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    default:
      return value.dump();
  }
}

std::string Article(const std::string& type) {
  if (type == "integer" || type == "array" || type == "object") return "an " + type;
  if (type == "null") return "null";
  return "a " + type;
}

void Check(const json& schema, const json& value, const std::string& path,
           std::vector<std::string>* out) {
  if (!schema.is_object()) return;
  if (auto t = schema.find("type"); t != schema.end()) {
    std::vector<std::string> types;
    if (t->is_string()) types.push_back(t->get<std::string>());
    if (t->is_array()) {
      for (const json& name : *t) {
        if (name.is_string()) types.push_back(name.get<std::string>());
      }
    }
    bool any = types.empty();
    for (const std::string& type : types) any = any || HasType(value, type);
    if (!any) {
      std::vector<std::string> names;
      for (const std::string& type : types) names.push_back(Article(type));
      out->push_back(absl::StrCat(path, ": expected ", absl::StrJoin(names, " or "), ", got ",
                                  Describe(value)));
      return;
    }
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    std::vector<std::string> names;
    for (const json& option : *e) {
      found = found || option == value;
      names.push_back(option.is_string() ? option.get<std::string>() : option.dump());
    }
    if (!found) {
      std::string message = absl::StrCat(path, ": ", Describe(value), " is not one of ",
                                         absl::StrJoin(names, ", "));
      if (value.is_string()) {
        std::string hint = validation::Suggest(value.get<std::string>(), names);
        if (!hint.empty()) absl::StrAppend(&message, " (", hint, ")");
      }
      out->push_back(std::move(message));
      return;
    }
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (auto m = schema.find("minimum"); m != schema.end() && m->is_number() && v < m->get<double>())
      out->push_back(absl::StrCat(path, ": ", value.dump(), " is below the minimum ", m->dump()));
    if (auto m = schema.find("maximum"); m != schema.end() && m->is_number() && v > m->get<double>())
      out->push_back(absl::StrCat(path, ": ", value.dump(), " is above the maximum ", m->dump()));
  }
  if (value.is_string()) {
    if (auto m = schema.find("minLength"); m != schema.end() && m->is_number_integer() &&
                                           static_cast<int64_t>(value.get_ref<const std::string&>().size()) <
                                               m->get<int64_t>()) {
      out->push_back(absl::StrCat(path, ": must not be empty"));
    }
    if (auto m = schema.find("maxLength"); m != schema.end() && m->is_number_integer() &&
                                           static_cast<int64_t>(value.get_ref<const std::string&>().size()) >
                                               m->get<int64_t>()) {
      out->push_back(absl::StrCat(path, ": ", value.get_ref<const std::string&>().size(),
                                  " bytes, more than the ", m->dump(), " allowed"));
    }
  }
  if (value.is_array()) {
    if (auto m = schema.find("minItems"); m != schema.end() && m->is_number_integer() &&
                                          static_cast<int64_t>(value.size()) < m->get<int64_t>()) {
      out->push_back(absl::StrCat(path, ": needs at least ", m->dump(), " item",
                                  m->get<int64_t>() == 1 ? "" : "s"));
    }
    if (auto m = schema.find("maxItems"); m != schema.end() && m->is_number_integer() &&
                                          static_cast<int64_t>(value.size()) > m->get<int64_t>()) {
      out->push_back(
          absl::StrCat(path, ": ", value.size(), " items, more than the ", m->dump(), " allowed"));
      return;
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i) {
        Check(*items, value[i], validation::JoinPath(path, i), out);
      }
    }
  }
  if (value.is_object()) {
    const json* properties = nullptr;
    if (auto p = schema.find("properties"); p != schema.end() && p->is_object()) properties = &*p;
    if (auto r = schema.find("required"); r != schema.end() && r->is_array()) {
      for (const json& name : *r) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          out->push_back(absl::StrCat(path, ": missing required argument \"",
                                      name.get<std::string>(), "\""));
        }
      }
    }
    const auto additional = schema.find("additionalProperties");
    const bool closed = additional != schema.end() && additional->is_boolean() &&
                        !additional->get<bool>();
    std::vector<std::string> known;
    if (properties != nullptr) {
      for (auto it = properties->begin(); it != properties->end(); ++it) known.push_back(it.key());
    }
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (properties != nullptr) {
        if (auto p = properties->find(it.key()); p != properties->end()) {
          Check(*p, it.value(), validation::JoinPath(path, it.key()), out);
          continue;
        }
      }
      if (closed) {
        std::string message = absl::StrCat(path, ": unknown argument ", json(it.key()).dump(
                                                       -1, ' ', false, json::error_handler_t::replace));
        std::string hint = validation::Suggest(it.key(), known);
        if (!hint.empty()) absl::StrAppend(&message, " (", hint, ")");
        out->push_back(std::move(message));
      } else if (additional != schema.end() && additional->is_object()) {
        Check(*additional, it.value(), validation::KeyPath(path, it.key()), out);
      }
    }
  }
}

}  // namespace

std::vector<std::string> CheckArguments(const json& schema, const json& value,
                                        const std::string& path) {
  std::vector<std::string> out;
  Check(schema, value, path, &out);
  return out;
}

}  // namespace mcpserver
}  // namespace understudy
