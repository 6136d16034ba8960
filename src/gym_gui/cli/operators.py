"""`gym-gui operators` (whatever can act, and whether it can act on an env) and `gym-gui arena`
(an evaluation batch: every operator on the same seeds, headless, with its numbers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Column, Table

from gym_gui.cli.app import app, connect, console, err_console, open_home
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_env_id
from gym_gui.play.batch import (
    DEFAULT_SLOTS,
    SUMMARY_COLUMNS,
    EpisodeResult,
    EvaluationBatch,
    OperatorResult,
    new_comparison_id,
    summary_cells,
)
from gym_gui.play.operators import Operators
from gym_gui.play.seat import Seeds
from gym_gui.play.seats import SeatedGames, SeatingResult, check_seating, parse_seats, swapped
from gym_gui.workers import worker_catalog


@app.command()
def operators(
    env: Annotated[
        str | None,
        typer.Option(help="Say for each operator whether it can act on this environment, and why not."),
    ] = None,
) -> None:
    """Everything that can take the seat: the random baseline, a person, and every finished run whose
    model can act (a CleanRL model, a Spade BDI Q-table, a language model's run), with what it acts on."""
    if env is not None:
        validate_env_id(env)
    with connect() as client:
        listing = Operators(open_home(), worker_catalog(), client.list_runs).listing(env)
    columns: list[Column | str] = ["operator", "kind", Column("source run", overflow="fold"), "acts on"]
    table = Table(*columns, *([f"on {env}"] if env else []))
    # Why an operator cannot act goes under the table, numbered: a long reason would fold the rows.
    reasons: list[str] = []
    for entry in listing:
        card = entry.card
        if card is None:
            acts_on = "-"
        else:
            learned = f" (learned on {', '.join(card.env_ids)})" if card.env_ids else ""
            acts_on = f"{card.observation} → {card.action}{learned}"
        row = [
            escape(entry.ref.text if card is None or not card.source_run else card.name),
            card.kind if card else "-",
            escape(card.source_run if card else entry.ref.run_id),
            escape(acts_on),
        ]
        if entry.problem:
            reasons.append(entry.problem)
            note = f"[red]no ({len(reasons)})[/]"
        else:
            note = "[green]usable[/]"
        if env:
            row.append(note)
        elif card is None:
            row[-1] = note
        table.add_row(*row)
    console.print(table)
    for number, reason in enumerate(reasons, 1):
        console.print(f"({number}) {reason}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def arena(
    env: Annotated[str, typer.Option(help="The environment every operator plays, e.g. FrozenLake-v1.")],
    operator_names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[OPERATOR...]",
            help="Operators to compare: RUN, RUN:CHECKPOINT, random or llm:CONFIG.json (`gym-gui operators` lists them).",
        ),
    ] = None,
    seat: Annotated[
        list[str] | None,
        typer.Option(
            metavar="AGENT=OPERATOR",
            help="A multi-agent env's seat and its operator, once per agent, e.g. player_0=random.",
        ),
    ] = None,
    swap: Annotated[
        bool, typer.Option(help="With --seat: also play every rotation of the operators round the seats.")
    ] = False,
    episodes: Annotated[int, typer.Option(min=1, max=1_000_000, help="Episodes per operator.")] = 100,
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="The first episode's seed.")] = 0,
    seeds: Annotated[
        Seeds,
        typer.Option(help="fixed: the same seed every episode; procedural: seed, seed+1, …"),
    ] = Seeds.PROCEDURAL,
    slots: Annotated[
        int, typer.Option(min=1, max=256, help="Episodes each operator plays at once (one request for all).")
    ] = DEFAULT_SLOTS,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Also write every episode's numbers to this JSON file.")
    ] = None,
) -> None:
    """Play every operator on the same seed sequence, headless, each as a run of its own (grouped by
    one comparison id), and print per operator its mean return with a 95 % confidence interval,
    success rate and mean length."""
    validate_env_id(env)
    if json_file is not None and not json_file.parent.is_dir():
        raise ConfigError(f"--json {json_file}: the directory {json_file.parent} does not exist")
    if seat:
        if operator_names:
            raise ConfigError(
                f"arena: name operators or --seat AGENT=OPERATOR, not both ({operator_names[0]})"
            )
        _seated(env, parse_seats(seat), swap, episodes, seed, json_file)
        return
    if swap:
        raise ConfigError("--swap: it plays seats from both sides; give them with --seat AGENT=OPERATOR")
    if not operator_names:
        raise ConfigError(
            "arena: name the operators to compare, or a multi-agent env's --seat AGENT=OPERATOR"
        )
    home = open_home()
    with connect() as client:
        catalog = Operators(home, worker_catalog(), client.list_runs)
        choices = [catalog.choose(name, env) for name in operator_names]

        def progress(index: int, episode: EpisodeResult) -> None:
            done = len(batch.results[index].episodes)
            if done % max(1, episodes // 10) == 0 or done == episodes:
                err_console.print(
                    f"{escape(batch.results[index].name)}: {done}/{episodes} episodes", highlight=False
                )

        batch = EvaluationBatch(
            client, choices, env, episodes, seed, seeds=seeds, slots=slots, on_episode=progress
        )
        results = batch.run()
    # The file first: a reader that closes the output early (`| head`) must not cost it.
    if json_file is not None:
        report = {
            "env_id": env,
            "episodes": episodes,
            "seed": seed,
            "seeds": seeds.value,
            "comparison": batch.comparison,
            "operators": [result.to_json() for result in results],
        }
        json_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(_table(results, env, episodes, seed, seeds))
    for result in results:
        if result.run_id:
            console.print(
                f"{result.name}: run {result.run_id}", highlight=False, markup=False, soft_wrap=True
            )
    console.print(f"comparison {batch.comparison}", highlight=False, markup=False, soft_wrap=True)
    failed = [result for result in results if result.error]
    if failed:
        for result in failed:
            err_console.print(f"error: {escape(result.operator)}: {escape(result.error)}", highlight=False)
        raise typer.Exit(1)


def _table(results: list[OperatorResult], env: str, episodes: int, seed: int, seeds: Seeds) -> Table:
    fallbacks = any(result.fallbacks for result in results)
    table = Table(
        Column("operator", overflow="fold"),
        *(Column(title, justify="right") for title in SUMMARY_COLUMNS),
        *([Column("fallbacks", justify="right")] if fallbacks else []),
        title=f"{env}: {episodes} episodes from seed {seed} ({seeds.value})",
    )
    for result in results:
        row = [escape(result.name), *summary_cells(result)]
        table.add_row(*row, *([str(result.fallbacks)] if fallbacks else []))
    return table


def _seated(
    env: str, seats: dict[str, str], swap: bool, episodes: int, seed: int, json_file: Path | None
) -> None:
    """The arena of a multi-agent env: every seating (one, or each rotation with ``--swap``) checked
    before any is played, then each played as a run of its own, grouped by one comparison id."""
    seatings = swapped(seats) if swap else [seats]
    comparison = new_comparison_id("arena")
    home = open_home()
    with connect() as client:
        catalog = Operators(home, worker_catalog(), client.list_runs)
        checked = [check_seating(env, seating, catalog.choose) for seating in seatings]
        results = []
        for seating in checked:
            label = " vs ".join(f"{agent}={choice.ref.text}" for agent, choice in seating.items())

            def progress(episode: int, label: str = label) -> None:
                done = episode + 1
                if done % max(1, episodes // 10) == 0 or done == episodes:
                    err_console.print(f"{escape(label)}: {done}/{episodes} games", highlight=False)

            games = SeatedGames(
                client, env, seating, episodes, seed, comparison=comparison, on_episode=progress
            )
            results.append(games.run())
    if json_file is not None:
        report = {
            "env_id": env,
            "episodes": episodes,
            "seed": seed,
            "comparison": comparison,
            "seatings": [result.to_json() for result in results],
        }
        json_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(_seats_table(results, env, episodes, seed))
    for result in results:
        if result.run_id:
            names = " vs ".join(s.name for s in result.seats)
            console.print(f"{names}: run {result.run_id}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"comparison {comparison}", highlight=False, markup=False, soft_wrap=True)
    failed = [result for result in results if result.error]
    for result in failed:
        err_console.print(f"error: {escape(result.error)}", highlight=False)
    if failed:
        raise typer.Exit(1)


def _seats_table(results: list[SeatingResult], env: str, episodes: int, seed: int) -> Table:
    table = Table(
        "seat",
        Column("operator", overflow="fold"),
        *(Column(title, justify="right") for title in ("wins", "draws", "losses", "win rate (95 % CI)")),
        Column("mean return ± 95 % CI", justify="right"),
        Column("illegal", justify="right"),
        title=f"{env}: {episodes} games a seating from seed {seed}",
    )
    for number, result in enumerate(results):
        for seat in result.seats:
            low, high = seat.win_ci95()
            played = bool(seat.games)
            table.add_row(
                escape(seat.agent),
                escape(seat.name),
                str(seat.wins),
                str(seat.draws),
                str(seat.losses),
                f"{seat.wins / seat.games:.1%} ({low:.1%}–{high:.1%})" if played else "-",
                f"{seat.mean_return:.3g} ± {seat.ci95:.3g}" if played else "-",
                str(seat.illegal),
                end_section=number < len(results) - 1 and seat is result.seats[-1],
            )
    return table
