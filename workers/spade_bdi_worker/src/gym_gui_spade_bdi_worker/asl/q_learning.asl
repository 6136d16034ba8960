// The Spade BDI worker's plans: an agent that learns by Q-learning.
//
// The worker posts !run once. From then on these plans decide what happens; the actions
// starting with a dot are the worker's (Python): they read and update the Q-table, step the
// environment and report to gym_gui. docs/runbooks/spade_bdi.md describes each one.
//
// Beliefs the worker keeps (percepts):
//   mode(fast | deliberate)      how steps are taken (params.mode)
//   evaluating                   an evaluation run: greedy, no learning, no schedule
//   epsilon(E)                   the exploration rate; the plans below change it
//   epsilon_decay(D)             what E is multiplied by after this episode: params.epsilon_decay,
//                                else the step the schedule fitted to the budget takes (renewed
//                                after every episode)
//   epsilon_end(M)               the floor of E
//   episode(N), episodes_left(K) the episode about to start (from 0), and how many remain
//   success_rate(R)              share of the last success_window episodes that reached the goal
//   state(S)                     deliberate mode: the state the agent is in
//   goal_reached, gave_up, episode_over    how the episode that just ended ended
//   checkpoint_due, checkpoint_requested   save the Q-table now (every N episodes / asked by the user)
//   stop_requested               the user cancelled the run

// ---------------------------------------------------------------- a run
+!run <- !!episode.

// ---------------------------------------------------------------- an episode
// fast: the step loop runs inside one action (the same choose/act/learn as below, in Python)
+!episode : mode(fast) & epsilon(E) <- .run_episode(E); !!episode_end.

// deliberate: every step is one pass through the reasoning cycle
+!episode : mode(deliberate) <- .reset(S); -+state(S); !!step.

// ---------------------------------------------------------------- a step: perceive, choose, act, learn
+!step : stop_requested <- !!episode_end.
+!step : episode_over <- !!episode_end.
+!step : state(S) & epsilon(E) <-
    .choose(S, E, A);
    .act(S, A, S2);
    .learn(S, A, S2);
    -+state(S2);
    !!step.

// ---------------------------------------------------------------- an episode ends
// the goal was reached
+!episode_end : goal_reached <- .end_episode(goal_reached); !boundary.
// it ran out of steps: give up this episode
+!episode_end : gave_up <- .end_episode(gave_up); !boundary.
// it fell (a hole, the cliff) or was stopped
+!episode_end <- .end_episode(failed); !boundary.

// ---------------------------------------------------------------- between two episodes
+!boundary <- !checkpoint; !explore; !continue.

+!checkpoint : checkpoint_requested <- .save_checkpoint(requested).
+!checkpoint : checkpoint_due <- .save_checkpoint(periodic).
+!checkpoint <- true.

// the exploration schedule: epsilon decays after every episode, never below its floor
+!explore : evaluating <- true.
+!explore : epsilon(E) & epsilon_decay(D) & epsilon_end(M) & E * D > M <- -+epsilon(E * D).
+!explore : epsilon_end(M) <- -+epsilon(M).

+!continue : stop_requested <- .finish(stopped).
+!continue : episodes_left(0) <- .finish(completed).
+!continue <- !!episode.
