#!/usr/bin/env python3
"""Lints docker/Dockerfile and docker/Dockerfile.cuda: pinned bases, exec-form entrypoints, a
numeric non-root user, SIGTERM, health checks, OCI labels, tidy apt-get, no remote ADD, and a
build stage that runs the project's own install script and the Makefile's cmake steps. Also
checks .dockerignore."""
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402
from dockerfile import Dockerfile  # noqa: E402

DOCKERFILES = ["docker/Dockerfile", "docker/Dockerfile.cuda"]
OCI_LABELS = ["title", "description", "version", "revision", "created", "source"]


def makefile_cmake():
    """The flags the Makefile passes to cmake's configure step, and its build command."""
    with open(os.path.join(d.REPO, "Makefile")) as f:
        text = f.read()
    configure = re.search(r"cmake -S \. -B \$\(BUILD_DIR\) (.*?) \$\(CMAKE_FLAGS\)", text)
    build = re.search(r"cmake --build \$\(BUILD_DIR\)", text)
    if not configure or not build:
        sys.exit("FAIL: the Makefile's cmake configure or build line has a new shape; update check_docker.py")
    return configure.group(1).split()


def project_version():
    with open(os.path.join(d.REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(gradsync VERSION ([0-9.]+)", f.read()).group(1)


def check_bases(f, df, where):
    for stage in df.stages:
        if stage.parent or df.selectable(stage):
            continue  # built on a stage of this file, not on an image
        image = df.image(stage)
        ok = "@sha256:" in image or re.search(r":[\w][\w.-]*$", image.split("/")[-1])
        f.expect(ok and not image.endswith(":latest") and "$" not in image,
                 f"{where}:{stage.line}: base image {image!r} is not pinned to a tag")


def check_runs(f, df, where):
    for stage in df.stages:
        for i in stage.instructions:
            at = f"{where}:{i.line}"
            if i.keyword == "ADD":
                f.expect(not re.search(r"https?://", i.args),
                         f"{at}: ADD from a URL (download in a RUN and verify it)")
            if i.keyword != "RUN":
                continue
            if "apt-get install" in i.args:
                for ok, problem in (
                        ("--no-install-recommends" in i.args, "without --no-install-recommends"),
                        (re.search(r"apt-get install (-\S+ )*-y\b", i.args), "without -y"),
                        ("apt-get update" in i.args, "without apt-get update in the same RUN"),
                        ("rm -rf /var/lib/apt/lists/*" in i.args, "without removing the lists in the same RUN")):
                    f.expect(ok, f"{at}: apt-get install {problem}")
            f.expect(not re.search(r"\b(curl|wget)\b[^|]*\|\s*(ba)?sh", i.args),
                     f"{at}: pipes a download into a shell")
    # BuildKit's built-in frontend runs RUN --mount; a `# syntax=` line makes it pull a frontend
    # image first, which fails wherever no registry answers.
    f.expect(not re.match(r"#\s*syntax\s*=", df.text),
             f"{where}: a '# syntax=' line makes offline builds fail (the built-in frontend has RUN --mount)")


def check_build_stage(f, df, where, cuda):
    build = next((s for s in df.stages if s.name == "build"), None)
    if not f.expect(build is not None, f"{where}: no stage named build"):
        return
    runs = [i.args for i in build.own("RUN")]
    f.expect(any(re.search(r"\bbash scripts/install-deps\.sh\b", r) for r in runs),
             f"{where}: the build stage does not run scripts/install-deps.sh")
    copies = [i.args for i in build.own("COPY")]
    f.expect(any("scripts/install-deps.sh" in c for c in copies), f"{where}: install-deps.sh is not copied")
    configure = next((r for r in runs if "cmake -S . -B build" in r), "")
    if f.expect(configure, f"{where}: no 'cmake -S . -B build' configure step"):
        for flag in makefile_cmake():
            f.expect(flag in configure, f"{where}: cmake configure lacks the Makefile's {flag}")
        f.expect("cmake --build build" in configure, f"{where}: no 'cmake --build build' after configure")
        cuda_flags = ["-DGRADSYNC_CUDA=ON", '-DCMAKE_CUDA_ARCHITECTURES="80;90"']
        for flag in cuda_flags if cuda else ["-DGRADSYNC_CUDA=OFF"]:
            f.expect(flag in configure, f"{where}: cmake configure lacks {flag}")
    if cuda:
        f.expect(re.match(r"nvidia/cuda:.*-devel-", df.image(build)),
                 f"{where}: build stage is not a CUDA devel image")


def check_final(f, df, where, stage, cuda):
    at = f"{where} target {stage.name}"
    users = stage.effective("USER")
    f.expect(users and re.fullmatch(r"[1-9][0-9]*(:[0-9]+)?", users[-1].args),
             f"{at}: the last USER is not a numeric non-root ID")
    entry = stage.effective("ENTRYPOINT")
    f.expect(entry and entry[-1].exec_form(), f"{at}: ENTRYPOINT missing or not in exec form")
    for cmd in stage.effective("CMD"):
        f.expect(cmd.exec_form() is not None, f"{where}:{cmd.line}: CMD not in exec form")
    signal = stage.effective("STOPSIGNAL")
    f.expect(signal and signal[-1].args == "SIGTERM", f"{at}: STOPSIGNAL is not SIGTERM")
    labels = stage.labels()
    missing = [k for k in OCI_LABELS if f"org.opencontainers.image.{k}" not in labels]
    f.expect(not missing, f"{at}: OCI labels {missing} missing")
    version = re.search(r"ARG VERSION=(\S+)", df.text)
    f.expect(version and version.group(1) == project_version(),
             f"{at}: ARG VERSION is not the project version {project_version()}")
    program = entry[-1].exec_form()[0] if entry and entry[-1].exec_form() else ""
    if program == "prometheus":
        # Debian's Prometheus: its own promtool asks /-/healthy.
        checks = stage.effective("HEALTHCHECK")
        probe = checks[-1].exec_form() if checks else None
        f.expect(probe and probe[:3] == ["promtool", "check", "healthy"],
                 f"{at}: no exec-form HEALTHCHECK CMD [\"promtool\", \"check\", \"healthy\", ...]")
    elif program.startswith("gradsync-"):
        checks = stage.effective("HEALTHCHECK")
        probe = checks[-1].exec_form() if checks else None
        if f.expect(probe and probe[:2] == ["gradsync", "healthcheck"],
                    f"{at}: no exec-form HEALTHCHECK CMD [\"gradsync\", \"healthcheck\", ...]"):
            port = probe[2].rsplit(":", 1)[-1]
            exposed = " ".join(i.args for i in stage.effective("EXPOSE")).split()
            f.expect(port in exposed, f"{at}: health check port {port} is not EXPOSEd")
    if cuda:
        f.expect(re.match(r"nvidia/cuda:.*-runtime-", df.image(stage) if not stage.parent else ""),
                 f"{at}: not built on a CUDA runtime image")


def ignored(patterns, path):
    hit = False
    for p in patterns:
        negate = p.startswith("!")
        p = p.lstrip("!").strip("/")
        if fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path.split("/")[0], p):
            hit = not negate
    return hit


def check_dockerignore(f, dockerfiles):
    path = os.path.join(d.REPO, ".dockerignore")
    if not f.expect(os.path.isfile(path), ".dockerignore is missing"):
        return
    with open(path) as fh:
        patterns = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    for must in (".git", "build", "build-deploy", "build/bin/gradsync"):
        f.expect(ignored(patterns, must), f".dockerignore does not exclude {must}")
    for df in dockerfiles:
        for stage in df.stages:
            for i in stage.own("COPY"):
                if "--from" in i.args:
                    continue
                for src in i.args.split()[:-1]:
                    if src == ".":
                        continue
                    at = f"{os.path.relpath(df.path, d.REPO)}:{i.line}: COPY {src}"
                    f.expect(os.path.exists(os.path.join(d.REPO, src)), f"{at} does not exist")
                    f.expect(not ignored(patterns, src), f"{at} is excluded by .dockerignore")
    for needed in ("docker/runtime-deps.sh", "scripts/install-deps.sh", "CMakeLists.txt", "libs", "services"):
        f.expect(not ignored(patterns, needed), f".dockerignore excludes {needed}, which the build needs")


def main():
    f = d.Failures()
    parsed = []
    for rel in DOCKERFILES:
        path = os.path.join(d.REPO, rel)
        if not f.expect(os.path.isfile(path), f"{rel} is missing"):
            continue
        df = Dockerfile(path)
        parsed.append(df)
        cuda = rel.endswith(".cuda")
        check_bases(f, df, rel)
        check_runs(f, df, rel)
        check_build_stage(f, df, rel, cuda)
        finals = df.final_stages()
        f.expect(finals, f"{rel}: no final stage")
        for stage in finals:
            check_final(f, df, rel, stage, cuda)
        print(f"{rel}: targets {', '.join(s.name or '?' for s in finals)}")
    check_dockerignore(f, parsed)
    f.finish("dockerfiles")


if __name__ == "__main__":
    main()
