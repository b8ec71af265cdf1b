# openenv-gym gymnasium server: any Gymnasium id (CartPole-v1 by default) over the OpenEnv protocol on port 8000.
#
# Build context: the repository root (see .dockerignore).
#   Where a registry is reachable:  docker build -f docker/gymnasium.Dockerfile -t openenv-gym/gymnasium .
#   Offline:                        openenv-gym build gymnasium
#     (fills docker/wheelhouse, imports a base image from the host's Python and builds
#      with --build-arg BASE=openenv-gym/python-base:latest --build-arg PIP_INSTALL_OPTIONS=--no-index)
# Run:  docker run --rm -p 127.0.0.1:8000:8000 openenv-gym/gymnasium [serve arguments]
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG PIP_INSTALL_OPTIONS=""
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp
COPY docker/wheelhouse /tmp/wheelhouse
COPY pyproject.toml README.md /tmp/src/
# The client dependencies first, in a layer of their own: the same in every image (built
# once) and kept while only the source changes.
RUN mkdir -p /tmp/src/openenv_gym && : > /tmp/src/openenv_gym/__init__.py \
    && python3 -m pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
        ${PIP_INSTALL_OPTIONS} --find-links /tmp/wheelhouse "/tmp/src[render]" \
    && python3 -m pip uninstall --yes --quiet --root-user-action=ignore openenv-gym \
    && rm -rf /tmp/src/openenv_gym /tmp/src/build /tmp/src/openenv_gym.egg-info
COPY openenv_gym /tmp/src/openenv_gym
RUN python3 -m pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
        ${PIP_INSTALL_OPTIONS} --find-links /tmp/wheelhouse "/tmp/src[render]" \
    && rm -rf /tmp/wheelhouse /tmp/src
# A non-root user (no passwd entry needed); docker run --user overrides it.
USER 10001:10001
EXPOSE 8000
ENTRYPOINT ["python3", "-m", "openenv_gym.cli", "serve"]
CMD ["gymnasium", "--env-id", "CartPole-v1", "--host", "0.0.0.0", "--port", "8000"]
