"""Package discovery for the one `xpiler` distribution.

passes/, manuals/ and sketches/ are top-level folders of the repository (the project's fixed
layout) but install inside the package as xpiler.passes, xpiler.manuals and xpiler.sketches.
Everything else is declared in pyproject.toml.
"""
from setuptools import find_packages, setup

MAPPED = {"xpiler.passes": "passes", "xpiler.manuals": "manuals", "xpiler.sketches": "sketches"}

packages = find_packages(include=["xpiler", "xpiler.*"])
package_dir = {"xpiler": "xpiler"}
for name, folder in MAPPED.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(where=folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(packages=packages, package_dir=package_dir)
