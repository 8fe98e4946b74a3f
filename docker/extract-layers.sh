#!/bin/sh
# Splits a Spring Boot jar into its layers (BOOT-INF/layers.idx) under DEST/<layer>/, the same
# layout as `java -Djarmode=tools -jar JAR extract --layers --launcher --destination DEST`.
# Used for psctl: it is a plain picocli program packaged by Boot, and jarmode=tools needs
# spring-core on the jar's classpath, which psctl does not carry.
# Usage: extract-layers.sh JAR DEST
set -eu
jar_file=$1
dest=$2
for layer in dependencies spring-boot-loader snapshot-dependencies application; do
  mkdir -p "$dest/$layer"
done
idx_dir=$(mktemp -d)
(cd "$idx_dir" && jar xf "$jar_file" BOOT-INF/layers.idx)
test -s "$idx_dir/BOOT-INF/layers.idx" || { echo "$jar_file has no BOOT-INF/layers.idx: build it with Spring Boot's repackage (layers enabled)" >&2; exit 1; }
layer=
while IFS= read -r line; do
  case "$line" in
    '- "'*) layer=${line#- \"}; layer=${layer%%\"*}; mkdir -p "$dest/$layer" ;;
    '  - "'*) entry=${line#  - \"}; entry=${entry%\"}; (cd "$dest/$layer" && jar xf "$jar_file" "$entry") ;;
  esac
done < "$idx_dir/BOOT-INF/layers.idx"
rm -rf "$idx_dir"
