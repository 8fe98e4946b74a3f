# scripts/lib/java.sh — sourced by scripts/run-local.sh and bin/psctl:
# picks the newest installed Java of version 17 or later to run the project with (the build still
# targets 17, whatever JDK runs it).
#
#   pick_java        sets JAVA_BIN (the java binary), JAVA_FEATURE (25 for 25.0.3) and
#                    JAVA_VERSION_STRING (25.0.3), or returns 1 when no Java 17+ is found
#   java_of_feature N  prints the java binary of an installed Java of feature version N (17), from
#                    the same places (PARAMSERVER_JAVA aside), or returns 1
#
# Where it looks, in this order (the newest version wins; on a tie the earlier place):
#   $PARAMSERVER_JAVA (a java binary or a JDK/JRE home: this one and no other), $JAVA_HOME,
#   the `java` on the PATH, /usr/lib/jvm/* (Debian, Ubuntu), /opt/java/openjdk (the Temurin
#   images), /usr/local/opt/openjdk*, /Library/Java/JavaVirtualMachines/*/Contents/Home (macOS).
# Versions are read from each home's `release` file, so no JVM is started to choose.

# The feature version of the Java home $1 (17 for 17.0.15), or nothing.
java_home_feature() {
  local line v=""
  [ -f "$1/release" ] || return 1
  # read with the shell's own builtins: bin/psctl runs this on every call
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      JAVA_VERSION=*)
        v=${line#JAVA_VERSION=}
        v=${v#\"}
        v=${v%%\"*}
        break
        ;;
    esac
  done <"$1/release"
  v=${v#1.}
  [ -n "$v" ] || return 1
  printf '%s %s\n' "${v%%[.+-]*}" "$v"
}

# The Java home of a java binary or a home $1, or nothing.
java_home_of() {
  local p=$1
  if [ -x "$p/bin/java" ]; then
    (cd "$p" && pwd -P)
  elif [ -x "$p" ] && [ ! -d "$p" ]; then
    p=$(readlink -f "$p" 2>/dev/null || echo "$p")
    (cd "$(dirname "$p")/.." && pwd -P)
  else
    return 1
  fi
}

java_of_feature() {
  local cand home fv
  for cand in "${JAVA_HOME:-}" "$(command -v java 2>/dev/null || true)" /usr/lib/jvm/* \
    /opt/java/openjdk /usr/local/opt/openjdk* /Library/Java/JavaVirtualMachines/*/Contents/Home; do
    [ -n "$cand" ] && [ -e "$cand" ] || continue
    home=$(java_home_of "$cand") || continue
    fv=$(java_home_feature "$home") || continue
    if [ "${fv%% *}" = "$1" ]; then
      echo "$home/bin/java"
      return 0
    fi
  done
  return 1
}

pick_java() {
  local best="" best_feature=0 best_version="" cand home fv feature version
  local -a cands=()
  if [ -n "${PARAMSERVER_JAVA:-}" ]; then
    cands=("$PARAMSERVER_JAVA")
  else
    [ -n "${JAVA_HOME:-}" ] && cands+=("$JAVA_HOME")
    cand=$(command -v java 2>/dev/null || true)
    [ -n "$cand" ] && cands+=("$cand")
    for cand in /usr/lib/jvm/* /opt/java/openjdk /usr/local/opt/openjdk* \
      /Library/Java/JavaVirtualMachines/*/Contents/Home; do
      [ -e "$cand" ] && cands+=("$cand")
    done
  fi
  for cand in "${cands[@]}"; do
    home=$(java_home_of "$cand") || continue
    fv=$(java_home_feature "$home") || continue
    feature=${fv%% *} version=${fv#* }
    [ "$feature" -ge 17 ] 2>/dev/null || continue
    if [ "$feature" -gt "$best_feature" ]; then
      best="$home/bin/java" best_feature=$feature best_version=$version
    fi
  done
  if [ -z "$best" ] && [ -z "${PARAMSERVER_JAVA:-}" ]; then
    # no release file anywhere (an unusual layout): the java on the PATH, asked for its version
    cand=$(command -v java 2>/dev/null || true)
    if [ -n "$cand" ]; then
      version=$("$cand" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)
      version=${version#1.}
      feature=${version%%[.+-]*}
      if [ "${feature:-0}" -ge 17 ] 2>/dev/null; then
        best=$cand best_feature=$feature best_version=$version
      fi
    fi
  fi
  [ -n "$best" ] || return 1
  JAVA_BIN=$best JAVA_FEATURE=$best_feature JAVA_VERSION_STRING=$best_version
}

# pick_java, remembered in the file $1 while what it depends on is unchanged: PARAMSERVER_JAVA,
# JAVA_HOME and PATH (and the working directory when one of them is relative) as they were, no
# folder of /usr/lib/jvm, /opt/java, /usr/local/opt or /Library/Java/JavaVirtualMachines changed
# since (a Java installed or removed), the chosen Java's release file unchanged. With a valid file it
# runs the shell's builtins only, no subshell and no command: bin/psctl runs it on every call, and on
# a machine whose cores a job keeps busy every process started waits for a core (pick_java starts
# about 30). A `java` on the PATH that became another through a symbolic link alone is not seen:
# delete the file (or set PARAMSERVER_JAVA).
pick_java_cached() {
  local file=$1 key d fresh=true
  local -a saved=()
  key="${PARAMSERVER_JAVA:-}|${JAVA_HOME:-}|${PATH:-}"
  case "|$key:" in
    *"|"[!/\|]* | *:[!/]*) key="$key|$PWD" ;; # a relative Java or PATH entry: also the folder
  esac
  if [ -f "$file" ]; then
    mapfile -t saved <"$file"
    if [ "${#saved[@]}" -eq 4 ] && [ "${saved[0]}" = "$key" ] && [ -x "${saved[1]}" ]; then
      for d in /usr/lib/jvm /opt/java /usr/local/opt /Library/Java/JavaVirtualMachines \
        "${saved[1]%/bin/java}/release"; do
        if [ "$d" -nt "$file" ]; then fresh=false; fi
      done
      if $fresh; then
        JAVA_BIN=${saved[1]} JAVA_FEATURE=${saved[2]} JAVA_VERSION_STRING=${saved[3]}
        return 0
      fi
    fi
  fi
  pick_java || return 1
  # written whole, then renamed: a concurrent call reads the old file or the new one
  if printf '%s\n' "$key" "$JAVA_BIN" "$JAVA_FEATURE" "$JAVA_VERSION_STRING" >"$file.$$" 2>/dev/null; then
    mv -f "$file.$$" "$file" 2>/dev/null || rm -f "$file.$$"
  fi
  return 0
}
