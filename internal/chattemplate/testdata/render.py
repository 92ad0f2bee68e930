"""Writes golden.json: each template of ../../tokenizer/testdata/*/tokenizer_config.json
rendered for each conversation of cases.json by Python's Jinja2 set up as HuggingFace's
apply_chat_template sets it up (an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, loopcontrols, raise_exception and tojson as transformers defines them),
with add_generation_prompt=True. Run: python3 render.py > golden.json (jinja2 3.1)."""
import json, pathlib, sys
import jinja2, jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

here = pathlib.Path(__file__).parent
cases = json.loads((here / "cases.json").read_text())
out = {}
for cfg in sorted((here / "../../tokenizer/testdata").glob("*/tokenizer_config.json")):
    c = json.loads(cfg.read_text())
    t = env.from_string(c["chat_template"])
    for case in cases:
        out[cfg.parent.name + "/" + case["name"]] = t.render(
            messages=case["messages"], add_generation_prompt=True,
            bos_token=c.get("bos_token") or "", eos_token=c.get("eos_token") or "")
json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
sys.stdout.write("\n")
