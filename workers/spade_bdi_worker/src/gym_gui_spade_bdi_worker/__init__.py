"""gym_gui's Spade BDI worker: a SPADE BDI agent whose AgentSpeak plans learn by tabular Q-learning.

- ``params``, ``environments``, ``checkpoint``: the parameters, the environment of a run, and the
  Q-table files; plain Python (gymnasium, numpy), shared by the plugin and the worker.
- ``plugin``: the ``WorkerPlugin`` gym_gui loads through the ``gym_gui.workers`` entry point; the
  only module that imports gym_gui.
- ``learner``, ``training``: the Q-table and its update, and the work behind the agent's actions
  (the environment, what is reported to gym_gui).
- ``xmpp``, ``agent``, ``__main__``: the XMPP server, the BDI agent, and the worker process;
  they run in the spade_bdi bundle.
- ``asl/q_learning.asl``: the agent's plans.
"""
