#include "scenario/text_proto.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "sim/text_check.h"
#include "topology/names.h"

namespace podsim::scenario {

namespace {

namespace pb = google::protobuf;

// Keeps the first error the text parser reports (it stops there anyway) with its 0-based
// position; warnings are dropped.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (error_) return;
    error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  bool error() const { return error_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  bool error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

// Every message type of the schema of `root`: those of its file, nested ones included, in
// declaration order, then those of other files that its fields reach.
void CollectMessages(const pb::Descriptor* type, std::vector<const pb::Descriptor*>* out) {
  if (std::find(out->begin(), out->end(), type) != out->end()) return;
  out->push_back(type);
  for (int i = 0; i < type->nested_type_count(); ++i) CollectMessages(type->nested_type(i), out);
}

std::vector<const pb::Descriptor*> SchemaMessages(const pb::Descriptor* root) {
  std::vector<const pb::Descriptor*> messages;
  const pb::FileDescriptor* file = root->file();
  for (int i = 0; i < file->message_type_count(); ++i) {
    CollectMessages(file->message_type(i), &messages);
  }
  CollectMessages(root, &messages);
  for (size_t m = 0; m < messages.size(); ++m) {  // Grows while it runs: a breadth-first walk.
    for (int i = 0; i < messages[m]->field_count(); ++i) {
      if (const pb::Descriptor* type = messages[m]->field(i)->message_type()) {
        CollectMessages(type, &messages);
      }
    }
  }
  return messages;
}

// The text between the first two double quotes at or after `from`.
std::optional<std::string> Quoted(const std::string& text, size_t from) {
  const size_t open = text.find('"', from);
  if (open == std::string::npos) return std::nullopt;
  const size_t close = text.find('"', open + 1);
  if (close == std::string::npos) return std::nullopt;
  return text.substr(open + 1, close - open - 1);
}

std::string Joined(const std::vector<std::string_view>& names) {
  std::string text;
  for (std::string_view name : names) {
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text;
}

// How people misspell names: "batch-tokens" for batch_tokens, "all_reduce" for ALL_REDUCE.
std::string Normalized(std::string_view name, bool upper) {
  std::string out;
  for (char c : name) {
    if (c == '-') c = '_';
    out += static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                   : std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string Suggestion(std::string_view given, const std::vector<std::string_view>& candidates,
                       bool upper) {
  std::optional<std::string> nearest = topology::NearestName(Normalized(given, upper), candidates);
  return nearest ? " (did you mean '" + *nearest + "'?)" : "";
}

// `name` as written when the text has it hyphenated: the tokenizer stops at '-', so
// "batch-tokens" reaches the parser as "batch"; `word` is the text at the error's position.
std::string AsWritten(const std::string& name, std::string_view word) {
  if (word.size() > name.size() && word.starts_with(name) && word[name.size()] == '-') {
    return std::string(word);
  }
  return name;
}

// protobuf: Message type "podsim.scenario.Collective" has no field named "bites".
std::optional<std::string> UnknownField(const pb::Descriptor* root, const std::string& message,
                                        std::string_view word) {
  constexpr std::string_view kPrefix = "Message type \"";
  constexpr std::string_view kMiddle = "\" has no field named \"";
  if (!message.starts_with(kPrefix)) return std::nullopt;
  const size_t middle = message.find(kMiddle);
  if (middle == std::string::npos) return std::nullopt;
  const std::string type_name = message.substr(kPrefix.size(), middle - kPrefix.size());
  std::optional<std::string> field = Quoted(message, middle + kMiddle.size() - 1);
  if (field) field = AsWritten(*field, word);
  const std::vector<const pb::Descriptor*> schema = SchemaMessages(root);
  auto named = std::find_if(schema.begin(), schema.end(),
                            [&](const pb::Descriptor* d) { return d->full_name() == type_name; });
  const pb::Descriptor* type = named == schema.end() ? nullptr : *named;
  if (!field || type == nullptr) return std::nullopt;
  std::vector<std::string_view> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->name());
  std::string text = "unknown field '" + *field + "' in " + type->name();
  const std::string suggestion = Suggestion(*field, names, false);
  text += suggestion;
  if (suggestion.empty()) {
    // A field written in the wrong message ("json" at the top level, not in outputs).
    for (const pb::Descriptor* other : schema) {
      if (other != type && other->FindFieldByName(*field) != nullptr) {
        text += "; '" + *field + "' is a field of " + other->name();
        break;
      }
    }
  }
  return text + "; fields: " + Joined(names);
}

// protobuf: Unknown enumeration value of "ALL_REDUCED" for field "op".
std::optional<std::string> UnknownEnumValue(const pb::Descriptor* root, const std::string& message,
                                            std::string_view word) {
  constexpr std::string_view kPrefix = "Unknown enumeration value of \"";
  constexpr std::string_view kMiddle = "\" for field \"";
  if (!message.starts_with(kPrefix)) return std::nullopt;
  const size_t middle = message.find(kMiddle);
  if (middle == std::string::npos) return std::nullopt;
  const std::string value =
      AsWritten(message.substr(kPrefix.size(), middle - kPrefix.size()), word);
  std::optional<std::string> field = Quoted(message, middle + kMiddle.size() - 1);
  if (!field) return std::nullopt;
  // The collector does not say which message the field is in: take every enum field of the
  // schema with that name (in podsim's schemas each such name has one enum type).
  std::vector<const pb::EnumDescriptor*> types;  // In schema order, each once.
  for (const pb::Descriptor* type : SchemaMessages(root)) {
    const pb::FieldDescriptor* f = type->FindFieldByName(*field);
    if (f != nullptr && f->enum_type() != nullptr &&
        std::find(types.begin(), types.end(), f->enum_type()) == types.end()) {
      types.push_back(f->enum_type());
    }
  }
  std::vector<std::string_view> names;
  for (const pb::EnumDescriptor* type : types) {
    for (int i = 0; i < type->value_count(); ++i) {
      if (type->value(i)->number() != 0) names.push_back(type->value(i)->name());
    }
  }
  std::string text = "unknown value '" + value + "' for field '" + *field + "'";
  text += Suggestion(value, names, true);
  if (!names.empty()) text += "; values: " + Joined(names);
  return text;
}

// The parser's message in podsim's voice: unknown names get a suggestion and the valid names;
// the others keep protobuf's words, starting lower-case like every podsim message. `word` is the
// text at the error's position.
std::string Rewrite(const pb::Descriptor* root, const std::string& message, std::string_view word) {
  if (std::optional<std::string> text = UnknownField(root, message, word)) return *text;
  if (std::optional<std::string> text = UnknownEnumValue(root, message, word)) return *text;
  std::string text = message;
  if (text.ends_with("got: ")) text += "the end of the file";  // protobuf's empty EOF token.
  if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
      std::islower(static_cast<unsigned char>(text[1]))) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

// A 0-based position as protobuf's tokenizer counts it: a tab advances the column to the next
// multiple of 8.
struct Position {
  int line = 0;
  int column = 0;
};

Position PositionOf(std::string_view text, size_t offset) {
  Position at;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 0;
    } else {
      at.column += text[i] == '\t' ? 8 - at.column % 8 : 1;
    }
  }
  return at;
}

size_t OffsetOf(std::string_view text, Position at) {
  size_t i = 0;
  for (int line = 0; line < at.line && i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
  }
  for (int column = 0; column < at.column && i < text.size() && text[i] != '\n'; ++i) {
    column += text[i] == '\t' ? 8 - column % 8 : 1;
  }
  return i;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The name starting at `offset`, hyphens included.
std::string_view WordAt(std::string_view text, size_t offset) {
  size_t end = offset;
  while (end < text.size() && (IsNameChar(text[end]) || text[end] == '-')) ++end;
  return text.substr(offset, end - offset);
}

// The name an error is about, for the errors protobuf reports at the token after it (it has
// consumed the name by then): an unknown field or enum value, a field given twice, a second
// member of a oneof.
std::optional<std::string> ConsumedName(const std::string& message) {
  constexpr std::string_view kNoField = "\" has no field named ";
  if (message.starts_with("Message type \"")) {
    const size_t at = message.find(kNoField);
    if (at == std::string::npos) return std::nullopt;
    return Quoted(message, at + kNoField.size());
  }
  if (message.starts_with("Non-repeated field \"") || message.starts_with("Field \"") ||
      message.starts_with("Unknown enumeration value of \"")) {
    return Quoted(message, 0);
  }
  return std::nullopt;
}

// Moves an error reported after a name back to where the name starts: its last whole-word
// occurrence before the reported position.
Position Relocate(std::string_view text, Position reported, const std::string& message) {
  std::optional<std::string> name = ConsumedName(message);
  if (!name || name->empty()) return reported;
  const size_t end = OffsetOf(text, reported);
  size_t at = end;
  while (at > 0) {
    at = text.rfind(*name, at - 1);
    if (at == std::string_view::npos) return reported;
    const size_t after = at + name->size();
    if ((at == 0 || !IsNameChar(text[at - 1])) &&
        (after >= text.size() || !IsNameChar(text[after]))) {
      return PositionOf(text, at);
    }
  }
  return reported;
}

// Records the position of every written field under `prefix`.
void MapFields(const pb::Message& message, const pb::TextFormat::ParseInfoTree& tree,
               const std::string& prefix, SourceMap* map) {
  const pb::Descriptor* type = message.GetDescriptor();
  const pb::Reflection* reflection = message.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    const bool is_message = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (field->is_repeated()) {
      const int count = reflection->FieldSize(message, field);
      for (int j = 0; j < count; ++j) {
        const pb::TextFormat::ParseLocation at = tree.GetLocation(field, j);
        if (at.line >= 0) {
          if (j == 0) map->Add(path, at.line + 1, at.column + 1);
          map->Add(path + "[" + std::to_string(j) + "]", at.line + 1, at.column + 1);
        }
        const pb::TextFormat::ParseInfoTree* nested =
            is_message ? tree.GetTreeForNested(field, j) : nullptr;
        if (nested != nullptr) {
          MapFields(reflection->GetRepeatedMessage(message, field, j), *nested,
                    path + "[" + std::to_string(j) + "]", map);
        }
      }
      continue;
    }
    const pb::TextFormat::ParseLocation at = tree.GetLocation(field, -1);
    if (at.line >= 0) map->Add(path, at.line + 1, at.column + 1);
    if (is_message && reflection->HasField(message, field)) {
      if (const pb::TextFormat::ParseInfoTree* nested = tree.GetTreeForNested(field, -1)) {
        MapFields(reflection->GetMessage(message, field), *nested, path, map);
      }
    }
  }
}

// The first string field under `prefix` that is not valid UTF-8 or holds a control character
// (newlines are allowed in descriptions only), as "[file:line:col: ]path: problem"; `tree` (may
// be null) gives the position.
sim::Status CheckStrings(const pb::Message& message, const pb::TextFormat::ParseInfoTree* tree,
                         const std::string& filename, const std::string& prefix) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int j = 0; j < count; ++j) {
      const int index = field->is_repeated() ? j : -1;
      std::string where = path;
      if (field->is_repeated()) {
        where += '[';
        where += std::to_string(j);
        where += ']';
      }
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& nested = field->is_repeated()
                                        ? reflection->GetRepeatedMessage(message, field, j)
                                        : reflection->GetMessage(message, field);
        const pb::TextFormat::ParseInfoTree* nested_tree =
            tree == nullptr ? nullptr : tree->GetTreeForNested(field, index);
        PODSIM_RETURN_IF_ERROR(CheckStrings(nested, nested_tree, filename, where));
        continue;
      }
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) continue;
      std::string scratch;
      const std::string& value =
          field->is_repeated() ? reflection->GetRepeatedStringReference(message, field, j, &scratch)
                               : reflection->GetStringReference(message, field, &scratch);
      const sim::Status status =
          sim::ValidateText(where, value, /*allow_newlines=*/field->name() == "description");
      if (status.ok()) continue;
      std::string position = filename;
      if (tree != nullptr) {
        const pb::TextFormat::ParseLocation at = tree->GetLocation(field, index);
        if (at.line >= 0) {
          position += ':';
          position += std::to_string(at.line + 1);
          position += ':';
          position += std::to_string(at.column + 1);
        }
      }
      return status.WithContext(position);
    }
  }
  return sim::Status::Ok();
}

}  // namespace

sim::Status ParseTextProto(std::string_view text, std::string_view filename, pb::Message* message,
                           SourceMap* source) {
  const std::string name(filename);
  if (text.size() > static_cast<size_t>(INT_MAX)) {
    return sim::Status::OutOfRange(name + ": " + std::to_string(text.size()) +
                                   " bytes; protobuf text is limited to 2 GiB");
  }
  message->Clear();
  FirstErrorCollector errors;
  pb::TextFormat::ParseInfoTree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, message)) {
    const pb::Descriptor* root = message->GetDescriptor();
    if (!errors.error()) return sim::Status::ParseError(name + ": cannot parse");
    if (errors.line() < 0) {
      return sim::Status::ParseError(name + ": " + Rewrite(root, errors.message(), ""));
    }
    const Position at = Relocate(text, {errors.line(), errors.column()}, errors.message());
    const std::string rewritten = Rewrite(root, errors.message(), WordAt(text, OffsetOf(text, at)));
    return sim::Status::ParseError(name + ":" + std::to_string(at.line + 1) + ":" +
                                   std::to_string(at.column + 1) + ": " + rewritten);
  }
  PODSIM_RETURN_IF_ERROR(CheckStrings(*message, &tree, name, ""));
  if (source != nullptr) {
    *source = SourceMap(name);
    MapFields(*message, tree, "", source);
  }
  return sim::Status::Ok();
}

sim::Status CheckStringFields(const pb::Message& message, std::string_view filename) {
  return CheckStrings(message, nullptr, std::string(filename), "");
}

}  // namespace podsim::scenario
