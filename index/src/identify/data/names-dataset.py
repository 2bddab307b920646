#!/usr/bin/env python3
"""Writes given_intl.txt and surnames_intl.txt beside this file from the PyPI package
`names-dataset` 3.3.1 (Philippe Rémy; Apache-2.0; names and their per-country rank in
105 countries; see NOTICE for where its lists come from).

A name is kept when it ranks in the first RANK of at least one country, is one word of
letters (an inner apostrophe or hyphen allowed) of 2 to 24 characters, and is not an
everyday English word: a word whose English frequency (the PyPI package `wordfreq`,
Zipf scale) is at least ZIPF is dropped unless the 1990 Census lists in this folder
hold it already. Output: lower case, sorted, one a line.

    pip download --no-deps names-dataset==3.3.1 && unzip names_dataset-3.3.1-py3-none-any.whl
    pip install wordfreq==3.1.1
    python3 index/src/identify/data/names-dataset.py PATH/names_dataset/v3
"""

import gzip
import pathlib
import pickle
import re
import sys

from wordfreq import zipf_frequency

RANK = 1000
ZIPF = 3.6
HERE = pathlib.Path(__file__).resolve().parent
WORD = re.compile(r"^[^\W\d_]+(?:['’-][^\W\d_]+)?$")


def keep(name, census):
    if not (2 <= len(name) <= 24) or not WORD.match(name):
        return False
    low = name.lower()
    return low in census or zipf_frequency(low, "en") < ZIPF


def names(path, census):
    data = pickle.load(gzip.open(path))
    out = set()
    for name, info in data.items():
        ranks = info.get("rank") or {}
        if ranks and min(ranks.values()) <= RANK and keep(name.strip(), census):
            out.add(name.strip().lower())
    return sorted(out)


def main():
    src = pathlib.Path(sys.argv[1])
    census_given = set((HERE / "first_names.txt").read_text().split())
    census_sur = set((HERE / "surnames.txt").read_text().split())
    given = names(src / "first_names.pkl.gz", census_given)
    sur = names(src / "last_names.pkl.gz", census_sur)
    (HERE / "given_intl.txt").write_text("\n".join(given) + "\n")
    (HERE / "surnames_intl.txt").write_text("\n".join(sur) + "\n")
    print(f"{len(given)} given names, {len(sur)} surnames")


if __name__ == "__main__":
    main()
