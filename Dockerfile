# Optional. The bundles name Codabench's stock image, codalab/codalab-legacy:py312 (numpy 1.26.4, scipy
# 1.11.4, scikit-learn 1.5.1, pandas 2.2.3, pyyaml 6.0.2, matplotlib 3.8.4, numba 0.61.2, psutil 7.0.0), and
# carry what it lacks in their program folders (wheels.lock: sympy 1.10.1, mpmath 1.3.0, h5py 3.12.1).
# This image is that stock image with the same pinned packages installed and byte-compiled: an organiser who
# can push it and names it in the YAML files saves importing sympy from source in every SRBench step. The
# bundles run unchanged on either image. The project's code is not in the image. `make image`, then
# docs/bundles.md ("The optional Docker image").
FROM codalab/codalab-legacy:py312

# numpy is named so that pip keeps the base image's version while resolving h5py.
RUN python3 -m pip install --no-cache-dir \
        numpy==1.26.4 sympy==1.10.1 mpmath==1.3.0 h5py==3.12.1 \
 && python3 -c "import h5py, numpy, pandas, scipy, sklearn, sympy, yaml, matplotlib; \
assert (numpy.__version__, scipy.__version__, sklearn.__version__, pandas.__version__) \
    == ('1.26.4', '1.11.4', '1.5.1', '2.2.3'), 'base image libraries changed'; \
assert sympy.__version__ == '1.10.1'; print('codascore image ok: h5py', h5py.__version__)"

LABEL org.opencontainers.image.title="codascore scoring image (optional)" \
      org.opencontainers.image.description="codalab/codalab-legacy:py312 plus sympy 1.10.1, mpmath 1.3.0, h5py 3.12.1, as the bundles vendor them"
