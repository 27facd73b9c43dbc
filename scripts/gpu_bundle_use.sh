# Sourced by scripts/gpu_check.sh --bundle: sets up a bundle made by scripts/gpu-bundle.sh on the
# machine that runs it.

# use_gpu_bundle ARCHIVE|DIR REPO: unpacks ARCHIVE into REPO/build-gpu-bundle (a directory that
# holds bundle/ is used as it is), points the source and build directories compiled into the
# binaries at REPO and the bundle (symbolic links, made only where nothing is), and prints the
# bundle's directory.
use_gpu_bundle() {
  local from="$1" repo="$2" dir source_dir build_dir
  if [ -d "$from/bundle" ]; then
    dir="$(cd "$from/bundle" && pwd)"
  else
    rm -rf "$repo/build-gpu-bundle"
    mkdir -p "$repo/build-gpu-bundle"
    xz -dc "$from" | tar -C "$repo/build-gpu-bundle" -xf - \
      || { echo "gpu_check.sh: cannot unpack $from" >&2; return 1; }
    dir="$repo/build-gpu-bundle/bundle"
  fi
  source_dir="$(sed -n 's/^source_dir=//p' "$dir/paths")"
  build_dir="$(sed -n 's/^build_dir=//p' "$dir/paths")"
  gpu_bundle_link "$source_dir" "$repo" || return 1
  gpu_bundle_link "$build_dir" "$dir" || return 1
  echo "$dir"
}

# gpu_bundle_link PATH TARGET: makes PATH lead to TARGET. Nothing to do when it already does;
# a link where nothing is; an error when something else is there.
gpu_bundle_link() {
  local path="$1" target="$2"
  if [ -e "$path" ] || [ -L "$path" ]; then
    if [ "$(cd "$path" 2>/dev/null && pwd -P)" = "$(cd "$target" && pwd -P)" ]; then return 0; fi
    if [ -x "$path/bin/gradsync" ]; then
      echo "gpu_check.sh: note: $path is a build of its own; the tests start its daemons" >&2
      return 0
    fi
    echo "gpu_check.sh: the bundle's binaries look for $path, which is already something else" >&2
    return 1
  fi
  mkdir -p "$(dirname "$path")"
  ln -s "$target" "$path"
}

# gpu_bundle_library_path DIR: the loader's path for the bundle in DIR: its own libraries, then
# the directories that hold the CUDA libraries it left to this machine (the toolkit's, the
# system's, or PyTorch's nvidia-* packages), found by asking the loader what is missing.
gpu_bundle_library_path() {
  local dir="$1" path="$1/lib" name found candidate
  local -a candidates=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib
    /usr/lib/x86_64-linux-gnu)
  while read -r candidate; do candidates+=("$candidate"); done < <(python3 - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
    for root in nvidia.__path__:
        for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
            print(lib)
except ImportError:
    pass
EOF
  )
  while read -r name; do
    found=""
    for candidate in "${candidates[@]}"; do
      if [ -e "$candidate/$name" ]; then found="$candidate"; break; fi
    done
    if [ -n "$found" ]; then
      case ":$path:" in *":$found:"*) ;; *) path="$path:$found" ;; esac
    else
      echo "gpu_check.sh: $name is not on this machine" >&2
    fi
  done < <(for f in "$dir"/tests/* "$dir"/bin/*; do [ -f "$f" ] && LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f"; done \
             | awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u)
  echo "$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
