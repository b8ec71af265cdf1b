"""The Docker images of our servers: one package for the whole builder.

- :mod:`openenv_gym.images.env_images`: the env images (``IMAGES``) and ``build_images``,
  which ``openenv-gym build`` runs;
- :mod:`openenv_gym.images.wheelhouse`: the build context, its requirements and wheels;
- :mod:`openenv_gym.images.base_image`: the offline base image made from the host's Python;
- :mod:`openenv_gym.images.build_output`: running a build step and showing its output.

Importing the package imports none of them (the builder needs the ``docker`` extra).
"""
