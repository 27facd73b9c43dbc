"""A Dockerfile read into stages of instructions, enough for the checks in check_docker.py."""
import json
import re


class Instruction:
    def __init__(self, keyword, args, line):
        self.keyword, self.args, self.line = keyword, args, line

    def exec_form(self):
        """The JSON array of an exec-form ENTRYPOINT, CMD or HEALTHCHECK CMD, or None."""
        text = self.args
        if self.keyword == "HEALTHCHECK":
            m = re.search(r"\bCMD\s+(.*)$", text)
            text = m.group(1) if m else ""
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, list) and all(isinstance(x, str) for x in value) else None


class Stage:
    def __init__(self, base, name, line):
        self.base, self.name, self.line = base, name, line
        self.instructions = []
        self.parent = None  # the Stage this one is built FROM, when it is one

    def own(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def effective(self, keyword):
        """Instructions of this stage and of the stages it is built FROM, outermost first."""
        inherited = self.parent.effective(keyword) if self.parent else []
        return inherited + self.own(keyword)

    def labels(self):
        out = {}
        for i in self.effective("LABEL"):
            for key, value in re.findall(r'([\w.-]+)=("(?:[^"\\]|\\.)*"|\S+)', i.args):
                out[key] = value.strip('"')
        return out


class Dockerfile:
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.text = f.read()
        self.global_args = {}
        self.stages = []
        for keyword, args, line in self._instructions():
            if keyword == "FROM":
                m = re.match(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", args, re.I)
                stage = Stage(m.group(1), m.group(2), line)
                stage.parent = next((s for s in self.stages if s.name == stage.base), None)
                self.stages.append(stage)
            elif not self.stages:
                if keyword == "ARG":
                    name, _, default = args.partition("=")
                    self.global_args[name.strip()] = default.strip().strip('"')
            else:
                self.stages[-1].instructions.append(Instruction(keyword, args, line))

    def _instructions(self):
        """(KEYWORD, arguments with continuations joined, first line number)."""
        pending, start = "", 0
        for number, raw in enumerate(self.text.split("\n"), 1):
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue  # comments and blank lines may sit inside a continued instruction
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            text = pending + stripped
            pending = ""
            keyword, _, args = text.partition(" ")
            yield keyword.upper(), re.sub(r"\s+", " ", args).strip(), start

    def image(self, stage):
        """The stage's base image with the global ARG defaults substituted."""
        return re.sub(r"\$\{?(\w+)\}?", lambda m: self.global_args.get(m.group(1), m.group(0)), stage.base)

    def selectable(self, stage):
        """Stages a FROM ${ARG} may name: the ARG's default and every ARG=<stage> the file names."""
        m = re.fullmatch(r"\$\{?(\w+)\}?", stage.base)
        if not m:
            return set()
        names = {s.name for s in self.stages}
        chosen = set(re.findall(rf"\b{m.group(1)}=([\w.-]+)", self.text))
        return {n for n in chosen | {self.global_args.get(m.group(1))} if n in names}

    def final_stages(self):
        """Stages that no other stage builds on or copies from: the images one can build."""
        used = set()
        for s in self.stages:
            used.add(s.base)
            used.update(self.selectable(s))
            for i in s.instructions:
                used.update(re.findall(r"(?:--from|from)=([\w.-]+)", i.args))
        return [s for s in self.stages if s.name not in used]
