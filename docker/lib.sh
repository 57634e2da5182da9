# Shared by docker/build: progress lines, input hashes and the skip of an image that is current.
# Sourced, not run.

# Prints a progress line on standard error, with the seconds since docker/build started.
say() {
  printf '[docker/build %4ss] %s\n' "$SECONDS" "$*" >&2
}

# The SHA-256 of the named files and directories (their paths and contents, in a stable order)
# and of any extra words given after `--`: what an image is built from.
inputs_hash() {
  local files=() extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  extra=("$@")
  {
    find "${files[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    printf '%s\n' "${extra[@]}"
  } | sha256sum | cut -c1-16
}

# The label that holds an image's input hash.
readonly INPUTS_LABEL=io.sendcap.inputs

# Whether image $1 exists with input hash $2.
image_current() {
  [ "$(docker image inspect -f "{{ index .Config.Labels \"$INPUTS_LABEL\" }}" "$1" 2>/dev/null)" = "$2" ]
}

# The id of image $1, or nothing if it does not exist.
image_id() {
  docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true
}
