"""The JSON Schemas (schemas/*.v1.json) agree with the validators.

Each document is judged twice: by the schema (python3-jsonschema, draft
2020-12) and by this build's validator (check_documents: the scenario
validator, trace::ValidateSpec, the session importer's parser, the sim config
validator for both its dialects). Proven here:

- every shipped pack, good test fixture and docs example is valid under both;
- the broken scenario and sim config fixtures are refused by the validator,
  and by the schema too when what is wrong is structure (an unknown or missing field,
  a wrong type, a value out of range, no action or two);
- the every-field fixtures (tests/schemas/every-field.*) use every property
  the schema names, and both accept them;
- an unknown field added to any mapping of those fixtures is refused by both;
- the session schema names exactly the fields of the .proto messages.

Environment: UNDERSTUDY_CHECK_DOCUMENTS (the check_documents binary),
UNDERSTUDY_SOURCE_DIR (the source tree). Run by ctest as schemas_agree.
"""

import copy
import json
import os
import pathlib
import re
import subprocess
import tempfile

import jsonschema
import pytest
import yaml

SOURCE = pathlib.Path(os.environ.get("UNDERSTUDY_SOURCE_DIR",
                                     pathlib.Path(__file__).resolve().parents[2]))
CHECK = os.environ.get("UNDERSTUDY_CHECK_DOCUMENTS", "")
HERE = SOURCE / "tests" / "schemas"
KINDS = ("scenario", "spec", "session", "sim", "sim-meow")
UNKNOWN = "zz_not_a_field"


def load_schema(kind):
    return json.loads((SOURCE / "schemas" / f"{kind}.v1.json").read_text())


SCHEMAS = {kind: load_schema(kind) for kind in KINDS}
VALIDATORS = {kind: jsonschema.Draft202012Validator(s) for kind, s in SCHEMAS.items()}


class Yaml12Loader(yaml.SafeLoader):
    """YAML as the validators and the YAML language server read it (1.2
    core): only true/false are booleans, so `yes` and `on` stay strings."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))


def parse_yaml(text):
    return yaml.load(text, Loader=Yaml12Loader)


def schema_errors(kind, instance):
    """Schema problems of a document (scenario, spec) or of each line of a
    session file (a list of lines' instances)."""
    if kind == "session":
        return [e.message for line in instance for e in VALIDATORS[kind].iter_errors(line)]
    return [e.message for e in VALIDATORS[kind].iter_errors(instance)]


def session_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def validator_verdicts(kind, texts):
    """{name: {"ok", "problems"}} from check_documents, one call per kind."""
    if not CHECK:
        pytest.skip("UNDERSTUDY_CHECK_DOCUMENTS is not set (ctest sets it)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (name, text) in enumerate(texts.items()):
            path = pathlib.Path(tmp) / f"{i}.{'jsonl' if kind == 'session' else 'yaml'}"
            path.write_bytes(text.encode() if isinstance(text, str) else text)
            paths.append((name, str(path)))
        out = subprocess.run([CHECK, kind] + [p for _, p in paths], check=True,
                             capture_output=True, text=True).stdout
        by_path = {v["file"]: v for v in map(json.loads, out.splitlines())}
        return {name: by_path[path] for name, path in paths}


def docs_blocks(doc, lang, starts):
    """Fenced `lang` blocks of a docs page that begin with `starts`."""
    text = (SOURCE / "docs" / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)
    return {f"docs/{doc} example {i}": b for i, b in enumerate(blocks) if b.startswith(starts)}


def good_documents(kind):
    files = {
        "scenario": sorted(SOURCE.glob("scenarios/*.yaml"))
                    + sorted(SOURCE.glob("tests/scenarios/*.yaml"))
                    + sorted(SOURCE.glob("tests/node*/fixtures/*.yaml"))
                    + [HERE / "every-field.scenario.yaml"],
        "spec": sorted(SOURCE.glob("fuzz/seeds/spec/*.yaml")) + [HERE / "every-field.spec.yaml"],
        "session": sorted(SOURCE.glob("fuzz/seeds/session_file/*.jsonl"))
                   + [HERE / "every-field.session.jsonl"],
        "sim": sorted(SOURCE.glob("tests/sim/configs/good/*.yaml")),
        "sim-meow": sorted(SOURCE.glob("tests/sim/configs/meow/good/*.yaml")),
    }[kind]
    docs = {str(f.relative_to(SOURCE)): f.read_text(encoding="utf-8") for f in files}
    if kind == "scenario":
        docs.update(docs_blocks("scenarios.md", "yaml", "schema: understudy.scenario/v1"))
        docs.update(docs_blocks("guide.md", "yaml", "schema: understudy.scenario/v1"))
    elif kind == "sim":
        docs.update(docs_blocks("sim.md", "yaml", "schema: understudy.sim/v1"))
    elif kind == "sim-meow":
        docs.update(docs_blocks("sim.md", "yaml", "# MEOW dialect"))
    elif kind == "spec":
        docs.update(docs_blocks("assertions.md", "yaml", ("assertions:", "schema: understudy.spec")))
        docs.update(docs_blocks("schemas.md", "yaml", ("assertions:", "schema: understudy.spec",
                                                       "# yaml-language-server")))
    else:
        # The example's first two lines are whole; the third is elided.
        example = docs_blocks("session-format.md", "json", '{"header"')
        for name, block in example.items():
            lines = block.splitlines()[:2]
            header = json.loads(lines[0])
            header["header"]["exchange_count"] = "1"
            docs[name] = json.dumps(header) + "\n" + lines[1] + "\n"
    return docs


def parse(kind, text):
    return session_lines(text) if kind == "session" else parse_yaml(text)


@pytest.mark.parametrize("kind", KINDS)
def test_schemas_are_2020_12_schemas(kind):
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[kind])
    assert SCHEMAS[kind]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMAS[kind]["$id"] == f"https://understudy.dev/schemas/{kind}/v1.json"


@pytest.mark.parametrize("kind", KINDS)
def test_good_documents_are_valid_under_both(kind):
    docs = good_documents(kind)
    assert len(docs) >= 2
    verdicts = validator_verdicts(kind, docs)
    for name, text in docs.items():
        assert verdicts[name]["ok"], (name, verdicts[name]["problems"])
        assert schema_errors(kind, parse(kind, text)) == [], name


# Validator messages that say the document's structure is wrong: a schema
# must refuse these documents too. (Others — patterns that do not compile,
# paths, cross-field rules, YAML-level problems — are the validator's own.)
STRUCTURAL = re.compile(
    r"unknown field|missing required field|expected (a|an|one of|true|template|call or say"
    r"|grpc_code, http_status|min, max)|must be at least|must not be (empty|negative)"
    r"|must be an HTTP|must be at most|unknown gRPC code|unknown schema|no action"
    r"|\d+ actions \(|both (call and say|template and result)")
NOT_YAML = re.compile(r"YAML syntax|YAML documents|nesting deeper|invalid UTF-8|empty document"
                      r"|duplicate field|duplicate key")


@pytest.mark.parametrize("kind, folder, least", [
    ("scenario", "tests/scenarios/broken", 20),
    ("sim", "tests/sim/configs/broken", 10),
    ("sim-meow", "tests/sim/configs/meow/broken", 8),
])
def test_broken_documents_are_refused_and_structure_by_the_schema_too(kind, folder, least):
    fixtures = sorted((SOURCE / folder).glob("*.yaml"))
    assert len(fixtures) > least
    texts = {f.name: f.read_bytes() for f in fixtures}
    verdicts = validator_verdicts(kind, texts)
    checked = 0
    for name, raw in texts.items():
        problems = verdicts[name]["problems"]
        assert problems, f"{name}: the validator finds nothing wrong"
        if any(NOT_YAML.search(p) for p in problems):
            continue  # no document a schema could judge
        errors = [p for p in problems if ": error: " in p]
        structural = [p for p in errors if STRUCTURAL.search(p)]
        try:
            document = parse_yaml(raw.decode())
        except yaml.YAMLError:
            # PyYAML refuses what yaml-cpp reads as a mapping keyed by a
            # mapping (an unquoted {{template}}); JSON has no such document.
            assert errors, name
            continue
        schema = schema_errors(kind, document)
        if structural:
            checked += 1
            assert schema, f"{name}: the schema accepts it, the validator says {structural}"
        if schema:
            assert errors, f"{name}: the schema refuses ({schema}) what the validator accepts"
    assert checked > least


# --- every property, unknown fields -----------------------------------------

def resolve(schema, node, pointer):
    while "$ref" in node:
        pointer = node["$ref"][1:]
        node = schema
        for part in pointer.strip("/").split("/"):
            node = node[part]
    return node, pointer


def declared_properties(schema):
    """(pointer of the object schema, property) for every property named."""
    out = set()

    def walk(node, pointer):
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                out.add((pointer, key))
            for key, value in node.items():
                if key == "properties":
                    for name, sub in value.items():
                        walk(sub, f"{pointer}/properties/{name}")
                elif isinstance(value, (dict, list)) and key != "if":
                    # (An `if` names the properties it tests, not ones a
                    # document may hold.)
                    walk(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{pointer}/{i}")

    walk(schema, "")
    return out


def exercised(schema, instance):
    """Walks `instance` along `schema`: the (pointer, property) pairs it
    uses, and the paths of its mappings whose schema allows no other keys."""
    used, closed = set(), []
    validator = jsonschema.Draft202012Validator(schema)

    def fits(node, value):
        return validator.evolve(schema=node).is_valid(value)

    def walk(node, pointer, value, path):
        node, pointer = resolve(schema, node, pointer)
        if isinstance(value, dict):
            props = node.get("properties", {})
            if props and node.get("additionalProperties") is False and path not in closed:
                closed.append(path)
            for key, sub in value.items():
                if key in props:
                    used.add((pointer, key))
                    walk(props[key], f"{pointer}/properties/{key}", sub, path + [key])
                elif isinstance(node.get("additionalProperties"), dict):
                    walk(node["additionalProperties"], f"{pointer}/additionalProperties", sub,
                         path + [key])
        if isinstance(value, list) and isinstance(node.get("items"), dict):
            for i, sub in enumerate(value):
                walk(node["items"], f"{pointer}/items", sub, path + [i])
        for keyword in ("oneOf", "anyOf", "allOf"):
            for i, branch in enumerate(node.get(keyword, [])):
                if keyword == "allOf" or fits(branch, value):
                    walk(branch, f"{pointer}/{keyword}/{i}", value, path)

    walk(schema, "", instance, [])
    return used, closed


def every_field(kind):
    # The sim's (each dialect's) is the good config that uses every key.
    sim = SOURCE / "tests" / "sim" / "configs"
    path = (sim / "good" / "every-key.yaml" if kind == "sim"
            else sim / "meow" / "good" / "every-key.yaml" if kind == "sim-meow"
            else HERE / f"every-field.{kind}.{'jsonl' if kind == 'session' else 'yaml'}")
    return parse(kind, path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", KINDS)
def test_every_property_the_schema_names_is_used_by_the_every_field_fixture(kind):
    schema = SCHEMAS[kind]
    used = set()
    instances = every_field(kind) if kind == "session" else [every_field(kind)]
    for instance in instances:
        used |= exercised(schema, instance)[0]
    missing = sorted(declared_properties(schema) - used)
    assert not missing, f"every-field.{kind} does not use: {missing}"


def with_unknown_field(instance, path):
    out = copy.deepcopy(instance)
    node = out
    for key in path:
        node = node[key]
    node[UNKNOWN] = 1
    return out


def dump(kind, instance):
    if kind == "session":
        return "".join(json.dumps(line) + "\n" for line in instance)
    return json.dumps(instance)  # JSON is YAML


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_fields_are_refused_by_both(kind):
    base = every_field(kind)
    variants = {}
    if kind == "session":
        for n, line in enumerate(base):
            for path in exercised(SCHEMAS[kind], line)[1]:
                lines = list(base)
                lines[n] = with_unknown_field(line, path)
                variants[f"line {n + 1} at {path}"] = lines
    else:
        for path in exercised(SCHEMAS[kind], base)[1]:
            variants[f"at {path}"] = with_unknown_field(base, path)
    assert len(variants) >= 10
    verdicts = validator_verdicts(kind, {k: dump(kind, v) for k, v in variants.items()})
    for name, instance in variants.items():
        assert schema_errors(kind, instance), f"{kind} schema accepts an unknown field {name}"
        assert not verdicts[name]["ok"], f"{kind} validator accepts an unknown field {name}"
        assert any(UNKNOWN in p or "Cannot find field" in p
                   for p in verdicts[name]["problems"]), (name, verdicts[name]["problems"])


def test_spec_schema_versions_and_informational_keys():
    texts = {
        "v1": "schema: understudy.spec/v1\nsession: golden\nassertions: [{no_misses: true}]\n",
        "v2": "schema: understudy.spec/v2\nassertions: [{no_misses: true}]\n",
        "none": "assertions: [{no_misses: true}]\n",
    }
    verdicts = validator_verdicts("spec", texts)
    for name, ok in (("v1", True), ("v2", False), ("none", True)):
        assert verdicts[name]["ok"] == ok, name
        assert (schema_errors("spec", parse_yaml(texts[name])) == []) == ok, name
    assert "this build reads understudy.spec/v1" in verdicts["v2"]["problems"][0]


# --- the session schema is the .proto's -------------------------------------

def proto_messages():
    from google.protobuf import descriptor_pb2
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "set.pb"
        subprocess.run(["protoc", "--include_imports", f"-I{SOURCE / 'proto'}",
                        f"--descriptor_set_out={out}", "understudy/v1/understudy.proto"],
                       check=True)
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return {m.name: [f.name for f in m.field] for f in fds.file for m in f.message_type}


def test_session_schema_names_exactly_the_proto_fields():
    messages = proto_messages()
    defs = SCHEMAS["session"]["$defs"]
    for name, schema in defs.items():
        assert sorted(schema["properties"]) == sorted(messages[name]), name
    assert sorted(SCHEMAS["session"]["properties"]) == sorted(messages["SessionFileLine"])
