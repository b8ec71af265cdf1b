"""The tests left out of the fast loop for their measured time (issue 28, item 8).

``pytest -m "not slow"`` is the contributors' fast loop; the full suite (``pytest``) runs all.
Tests that are slow by nature (training runs, fleets of servers, fresh venvs) carry
``@pytest.mark.slow`` where they are written. The ones below are slow by measurement: each
took more than 3 s (setup, call and teardown; a test's own parameters can differ) in a
``pytest -m "not slow" --durations=0`` run on the shared 2-core machine at load ~5, or more
than 2.5 s in a second run at load 6-10 (about 1 s on an idle machine; the comment is the
time measured). The root ``conftest.py`` marks them ``slow`` at collection.
``tests/test_fast_loop.py`` checks that each names a test that exists and that the fast loop
still covers every module of ``openenv_gym``.

Keys are files; values are test names, a name with ``[...]`` is one parameter set of a test,
a name without it every parameter set.
"""

from __future__ import annotations

SLOW_TESTS: dict[str, tuple[str, ...]] = {
    "openenv_gym/bench/link_server.py": (
        "openenv_gym.bench.link_server",  # 5 s
    ),
    "openenv_gym/env.py": (
        "openenv_gym.env",  # 4 s
    ),
    "openenv_gym/envs/atari/client.py": (
        "openenv_gym.envs.atari.client",  # 4 s
    ),
    "openenv_gym/integrations/sb3.py": (
        "openenv_gym.integrations.sb3",  # 8 s
        "openenv_gym.integrations.sb3.make_vec_env",  # 6 s
    ),
    "openenv_gym/multiagent/vector.py": (
        "openenv_gym.multiagent.vector",  # 3 s at load ~10
    ),
    "openenv_gym/providers/local.py": (
        "openenv_gym.providers.local",  # 4 s
    ),
    "tests/benchmarks/test_bench_command.py": (
        "test_servers_start_with_workers_and_stop",  # 8 s
    ),
    "tests/benchmarks/test_codecs.py": (
        "test_every_codec_round_trips_and_the_quick_table_prints",  # 6 s
    ),
    "tests/benchmarks/test_links.py": (
        "test_a_vector_env_steps_through_a_link",  # 9 s
        "test_notes_name_the_link_and_its_limits_per_n",  # 5 s
        "test_the_ceiling_is_measured_and_printed",  # 5 s
        "test_the_proxy_process_delays_and_stops",  # 4 s
        "test_the_server_s_dev_shm_is_private",  # 3 s
    ),
    "tests/benchmarks/test_measure.py": (
        "test_the_plot_is_a_png",  # 5 s
    ),
    "tests/cli/test_build_progress.py": (
        "test_pip_progress_is_streamed_and_a_failure_carries_the_log",  # 3 s
    ),
    "tests/cli/test_check.py": (
        "test_check_as_a_command_prints_the_report_and_exits_1",  # 3 s
        "test_token_is_sent_and_a_missing_one_fails_clearly",  # 3 s
    ),
    "tests/cli/test_cli_commands.py": (
        "test_build_outside_a_clone_is_one_readable_line",  # 3 s
        "test_debug_gives_the_traceback",  # 5 s
        "test_rootfs_holds_the_host_python_and_its_libraries",  # 5 s
    ),
    "tests/cli/test_program.py": (
        "test_ctrl_c_exits_130",  # 4 s
        "test_ctrl_c_inside_a_string_exec_still_exits_130",  # 4 s
        "test_record_with_a_wrong_env_id_shows_the_servers_error",  # 15 s
        "test_usage_error_exits_2",  # 4 s
    ),
    "tests/cli/test_serve.py": (
        "test_exit_with_parent_stops_at_stdin_eof",  # 4 s
        "test_port_in_use_exits_1",  # 8 s
        "test_serve_options_reach_the_server",  # 3 s
        "test_serve_prints_ready_serves_and_stops_on_signal[2]",  # 3 s
        "test_unknown_env_id_exits_1_with_one_line",  # 4 s
        "test_without_exit_with_parent_stdin_eof_does_not_stop",  # 4 s
    ),
    "tests/cli/test_serve_games.py": (
        "test_serve_atari_options_reach_the_server",  # 10 s
        "test_serve_chess_options_reach_the_server",  # 6 s
    ),
    "tests/cli/test_user_hints.py": (
        "test_check_recommends_the_chess_id_for_a_chess_server",  # 8 s
    ),
    "tests/client/test_tls.py": (
        "test_wss_to_a_plain_server_is_a_clear_connection_error",  # 5 s
    ),
    "tests/docs/test_docs.py": (
        "test_code_block_runs[README.md:61]",  # 45 s
        "test_code_block_runs[docs/servers.md:238]",  # 32 s
        "test_code_block_runs[docs/servers.md:175]",  # an embedded Breakout server (issue 36)
        "test_code_block_runs[docs/servers.md:90]",  # 18 s
        "test_code_block_runs[docs/spaces.md:368]",  # 14 s
        "test_code_block_runs[docs/vector.md:23]",  # 9 s
        "test_code_block_runs[docs/vector.md:41]",  # 8 s
        "test_code_block_runs[docs/wrappers.md:55]",  # 7 s
        # Measured at load ~10 (shared machine): each starts an embedded chess server.
        "test_code_block_runs[docs/multiagent.md:20]",  # 5 s
        "test_code_block_runs[docs/multiagent.md:44]",  # 4 s
        "test_code_block_runs[docs/multiagent.md:107]",  # 5 s
        "test_code_block_runs[docs/multiagent.md:143]",  # 17 s: RLlib PPO self-play, one iteration
    ),
    "tests/envs/test_atari.py": (
        "test_binary_against_an_official_server_is_a_clear_error",  # 4 s
        "test_binary_and_json_give_identical_observations",  # 4 s
        "test_embedded_server_with_custom_settings",  # 10 s
        "test_official_client_against_our_server_gets_json",  # 4 s
        "test_our_client_against_an_official_server_falls_back_to_json",  # 7 s
        "test_remote_pong_matches_raw_ale_pong_v5",  # 8 s
        "test_reset_reward_and_done_match_the_official_server",  # 3 s
        "test_same_seed_same_actions_same_frames",  # 4 s
        "test_spaces_are_exact_for_every_obs_type[grayscale-shape1]",  # 4 s
        "test_spaces_are_exact_for_every_obs_type[rgb-shape0]",  # 5 s
    ),
    "tests/envs/test_atari_compression.py": (
        "test_a_single_env_gets_the_same_screens_in_far_fewer_bytes",  # 3 s
        "test_make_vec_with_compression_forced_on_gives_the_same_observations",  # 9 s
        "test_our_clients_against_an_official_server_with_compression",  # 16 s
        "test_the_official_client_gets_json_beside_a_compressed_connection",  # 6 s
    ),
    "tests/envs/test_chess.py": (
        "test_embedded_chess_server",  # 6 s
    ),
    "tests/envs/test_chess_vector.py": (
        "test_a_bare_pawn_move_to_the_last_rank_is_a_queen_promotion",  # 3 s
        "test_make_vec_is_native_with_one_mask_per_sub_env",  # 5 s
        "test_the_single_env_is_an_openenv_env_with_masks",  # 7 s
    ),
    "tests/envs/test_gymnasium_tools.py": (
        "test_a_game_mismatch_with_an_official_server_raises_at_reset",  # 3 s
        "test_atari_preprocessing_matches_local_ale",  # 11 s
        "test_atari_preprocessing_refuses_a_server_that_skips_frames",  # 8 s
        "test_record_video_on_remote_cartpole",  # 12 s
        "test_terminated_and_truncated_match_raw_gymnasium_on_every_step",  # 17 s
        "test_terminating_on_the_last_allowed_step_reports_both_flags",  # 7 s
    ),
    "tests/examples/test_examples.py": (
        "test_rollout_quick",  # 10 s
    ),
    "tests/packaging/test_setup_script.py": (
        "test_a_second_run_with_the_same_extras_installs_nothing",  # 6 s
        "test_other_extras_or_a_changed_pyproject_install_again",  # 4 s
    ),
    "tests/providers/test_container_reaper.py": (
        "test_a_killed_owner_s_containers_are_removed",  # 7 s
        "test_a_provider_without_remove_with_owner_starts_no_reaper",  # 4 s
        "test_remove_with_owner_survives_sigkill_of_the_owner",  # 12 s
    ),
    "tests/providers/test_docker.py": (
        "test_a_bad_command_line_reports_the_usage_error",  # 3 s
        "test_a_container_that_cannot_start_reports_its_log",  # 5 s
        "test_a_server_that_never_answers_times_out_with_its_log",  # 5 s
        "test_check_command_passes_against_a_container",  # 5 s
        "test_container_is_hardened_and_published_on_loopback_only",  # 5 s
        "test_container_is_removed_when_env_construction_fails",  # 4 s
        "test_docker_v0_runs_an_image_with_serve_args",  # 4 s
        "test_gym_make_with_image_steps_cartpole_in_a_container",  # 4 s
        "test_server_is_ready_when_start_returns",  # 4 s
        "test_token_is_required_through_the_container",  # 5 s
    ),
    "tests/providers/test_local.py": (
        "test_a_server_that_cannot_start_reports_its_output",  # 8 s
        "test_embedded_server_starts_and_stops_on_close",  # 8 s
        "test_no_orphan_server_after_the_parent_ends",  # 31 s
        "test_provider_is_a_context_manager_and_stop_is_idempotent",  # 6 s
        "test_server_is_stopped_when_env_construction_fails",  # 8 s
    ),
    "tests/providers/test_ray.py": (
        "test_fleet_local_is_the_default_child_process",  # 10 s
        "test_without_ray_init_the_error_names_ray_init",  # 11 s
    ),
    "tests/server/test_admission.py": (
        "test_a_server_out_of_descriptors_logs_it_keeps_answering_and_recovers",  # 6 s
    ),
    "tests/server/test_auth.py": (
        "test_embedded_server_with_a_token",  # 3 s
        "test_serve_command_takes_token_from_flag_or_variable[variable]",  # 3 s
        "test_two_authorization_headers_are_a_bad_request_without_a_traceback",  # 3 s
    ),
    "tests/server/test_bind_policy.py": (
        "test_insecure_wide_bind_serves_with_a_warning_in_a_private_network",  # 4 s
    ),
    "tests/server/test_connection.py": (
        "test_a_bad_busy_poll_flag_is_a_usage_error",  # 4 s
    ),
    "tests/server/test_fuzz.py": (
        "test_every_batch_frame_gets_an_official_reply_and_the_connection_lives_on",  # 4 s
    ),
    "tests/server/test_prompt_stop.py": (
        "test_sigterm_still_closes_a_reading_peer_cleanly",  # 4 s
        "test_sigterm_stops_the_server_without_waiting_for_a_peer_that_does_not_read",  # 4 s
    ),
    "tests/test_env.py": (
        "test_cartpole_renders_remotely_like_local_cartpole",  # 7 s
    ),
    "tests/test_mcp_env.py": (
        "test_make_vec_over_an_mcp_env",  # 3 s
        "test_sampled_calls_are_accepted_by_the_server",  # 5 s
    ),
    "tests/test_official_shapes.py": (
        "test_check_reports_a_server_that_ignores_seeds_as_its_own_finding",  # 4 s
    ),
    "tests/test_offline_rl.py": (
        "test_recorded_actions_are_the_executed_ones_and_replay_under_noise",  # 15 s
    ),
    "tests/test_registration.py": (
        "test_module_prefixed_id_works_without_importing_the_package",  # 4 s
        "test_served_pendulum_has_a_continuous_action_space",  # 4 s
    ),
    "tests/test_time_limits.py": (
        "test_a_limit_above_the_served_one_runs_episodes_as_the_raw_id_does",  # 4 s
        "test_a_limit_below_the_served_one_truncates_there",  # 4 s
        "test_make_vec_keeps_the_users_limit_and_the_default",  # 16 s
        "test_record_max_episode_steps_above_the_served_limit",  # 5 s
        "test_the_default_limit_still_truncates_at_the_ids_own_limit",  # 6 s
    ),
    "tests/vector/test_compression.py": (
        "test_compressed_frames_carry_the_same_observations_in_far_fewer_bytes",  # 6 s
        "test_over_a_20_ms_link_the_client_s_busy_polling_pauses",  # 9 s
        "test_through_a_link_the_shared_memory_probe_fails",  # 4 s
    ),
    "tests/vector/test_connections.py": (
        "test_a_broken_connection_without_reconnect_names_the_sub_env_and_the_fix",  # 5 s
        "test_reopen_after_a_killed_server_restarts_it_and_close_stops_it",  # 8 s
        "test_reopen_of_a_dead_server_it_does_not_own_names_the_cause",  # 6 s
    ),
    "tests/vector/test_env_atari.py": (
        "test_sessions_per_server_starts_one_embedded_server_per_group",  # 7 s
        "test_vector_cartpole_encodings_match_raw_gymnasium",  # 8 s
    ),
    "tests/vector/test_exit.py": (
        "test_exit_with_an_open_vector_env_is_clean",  # 22 s
    ),
    "tests/vector/test_faults.py": (
        "test_frozen_server_times_out",  # 4 s
        "test_killed_server_raises_sub_env_error",  # 3 s
        "test_reconnect_restarts_the_embedded_server",  # 8 s
        "test_reconnect_to_a_dead_server_it_does_not_own_fails_clearly",  # 5 s
    ),
    "tests/vector/test_pool.py": (
        "test_async_pool_serves_every_sub_env_in_batches",  # 3 s
        "test_killed_server_raises_sub_env_error_naming_it",  # 7 s
        "test_reconnect_returns_the_sub_envs_in_flight_truncated",  # 16 s
    ),
    "tests/vector/test_reconnect_backoff.py": (
        "test_a_server_back_within_the_budget_is_found_again",  # 7 s
        "test_a_server_gone_for_good_fails_after_the_budget_with_the_real_cause",  # 7 s
    ),
    "tests/wrappers/test_native_vector.py": (
        "test_recorded_trajectories_are_the_same_on_native_and_sync",  # 4 s
    ),
    "tests/wrappers/test_noise.py": (
        "test_epsilon_random_replaces_a_fraction_of_discrete_actions",  # 3 s
        "test_gaussian_noise_has_its_sigma_and_is_seeded_by_reset",  # 10 s
        "test_ornstein_uhlenbeck_noise_is_correlated_in_time",  # 4 s
    ),
    "tests/wrappers/test_normalization.py": (
        "test_single_env_statistics_match_numpy_on_remote_cartpole",  # 4 s
    ),
    "tests/wrappers/test_trajectory.py": (
        "test_images_load_with_datasets_with_shape_and_dtype",  # 3 s
    ),
}


def is_slow(nodeid: str) -> bool:
    """Whether a test's node id (``file::name[params]``) is listed.

    Example:
        >>> is_slow("tests/vector/test_exit.py::test_exit_with_an_open_vector_env_is_clean[kill]")
        True
        >>> is_slow("tests/vector/test_exit.py::test_something_else")
        False
    """
    path, _, name = nodeid.partition("::")
    names = SLOW_TESTS.get(path, ())
    return name in names or name.partition("[")[0] in names
