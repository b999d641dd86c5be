#!/usr/bin/env bash
# Builds the benchmark corpora under bench/corpus/ (gitignored):
#   kernel.txt    the file list of the Linux 6.1 source tree (Debian's
#                 linux-source-6.1), ~78k paths, relative to the tree root
#   kernel13.txt  that list 13 times, each copy under a numeric prefix
#                 (00/ .. 12/), ~1M paths
#   k100.txt      kernel.txt plus the head of kernel13.txt: exactly 100,000 paths
#   unicode.txt   a generated list mixing NFC and NFD accents, CJK, Hangul,
#                 Greek, Cyrillic and emoji (astral, two UTF-16 units each)
# Needs: apt-get, dpkg-deb, tar, xz (Debian packages apt, dpkg, tar,
# xz-utils) and Go. Only the list is extracted: the tarball is streamed
# through `tar -t`, never unpacked.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus
cd corpus

deb=$(ls linux-source-6.1_*_all.deb 2>/dev/null | tail -n 1 || true)
if [[ -z "$deb" ]]; then
	echo "corpus.sh: downloading linux-source-6.1 (about 140 MB; run 'apt-get update' first if this fails)" >&2
	apt-get download linux-source-6.1
	deb=$(ls linux-source-6.1_*_all.deb | tail -n 1)
fi

if [[ ! -s kernel.txt || "$deb" -nt kernel.txt ]]; then
	echo "corpus.sh: listing $deb" >&2
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO --wildcards '*/linux-source-6.1.tar.xz' |
		tar -tJ |
		grep -v '/$' |
		sed 's#^linux-source-6\.1/##' >kernel.txt.tmp
	mv kernel.txt.tmp kernel.txt
fi

for i in $(seq -w 0 12); do sed "s#^#$i/#" kernel.txt; done >kernel13.txt
{ cat kernel.txt; head -n $((100000 - $(wc -l <kernel.txt))) kernel13.txt; } >k100.txt

(cd .. && go run ./cmd/gencorpus -n 50000 -seed 1) >unicode.txt

wc -l kernel.txt k100.txt kernel13.txt unicode.txt >&2
