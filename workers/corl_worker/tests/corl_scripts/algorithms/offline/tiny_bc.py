# A CORL-shaped script written for gym_gui's tests: behaviour cloning the way CORL's any_percent_bc.py is
# laid out (pyrallis TrainConfig, d4rl.qlearning_dataset, wandb.init/log, torch.save checkpoints), tiny.
# Its config is typed as CORL's are (typing.List, typing.Optional), which pyrallis 0.3 reads.
# ruff: noqa: UP006, UP035, UP045
import os
import uuid
from dataclasses import asdict, dataclass, field
from typing import List, Optional

import d4rl
import gym
import numpy as np
import pyrallis
import torch
import torch.nn as nn
import wandb


@dataclass
class TrainConfig:
    # wandb project name
    project: str = "CORL"
    # wandb group name
    group: str = "TinyBC"
    # wandb run name
    name: str = "TinyBC"
    # training dataset and evaluation environment
    env: str = "halfcheetah-medium-v2"
    # total gradient updates during training
    max_timesteps: int = int(1e6)
    # training batch size
    batch_size: int = 64
    # hidden layer sizes
    hidden: List[int] = field(default_factory=lambda: [32])
    # learning rate
    lr: float = 1e-3
    # whether to normalize states
    normalize: bool = True
    # evaluation frequency, will evaluate eval_freq training steps
    eval_freq: int = 100
    # number of episodes to run during evaluation
    n_episodes: int = 2
    # path for checkpoints saving, optional
    checkpoints_path: Optional[str] = None
    # training random seed
    seed: int = 0
    # training device
    device: str = "cuda"
    # raise after this many steps (tests of a failing script), 0 never
    fail_at: int = 0

    def __post_init__(self):
        self.name = f"{self.name}-{self.env}-{str(uuid.uuid4())[:8]}"
        if self.checkpoints_path is not None:
            self.checkpoints_path = os.path.join(self.checkpoints_path, self.name)


def eval_actor(env, actor, n_episodes, seed, mean, std):
    env.seed(seed)
    returns = []
    for _ in range(n_episodes):
        state, done, total = env.reset(), False, 0.0
        while not done:
            with torch.no_grad():
                obs = torch.tensor((state - mean) / std, dtype=torch.float32)
                action = actor(obs).numpy()
            state, reward, done, _ = env.step(action)
            total += reward
        returns.append(total)
    return np.asarray(returns)


@pyrallis.wrap()
def train(config: TrainConfig):
    env = gym.make(config.env)
    state_dim = env.observation_space.shape[0]
    action_dim = env.action_space.shape[0]
    max_action = float(env.action_space.high[0])
    dataset = d4rl.qlearning_dataset(env)
    mean, std = (
        (dataset["observations"].mean(0), dataset["observations"].std(0) + 1e-3)
        if config.normalize
        else (0.0, 1.0)
    )
    states = torch.tensor((dataset["observations"] - mean) / std, dtype=torch.float32)
    actions = torch.tensor(dataset["actions"], dtype=torch.float32)
    if config.checkpoints_path is not None:
        os.makedirs(config.checkpoints_path, exist_ok=True)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    layers, width = [], state_dim
    for size in config.hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    actor = nn.Sequential(*layers, nn.Linear(width, action_dim), nn.Tanh()).to(config.device)
    optimizer = torch.optim.Adam(actor.parameters(), lr=config.lr)
    wandb.init(
        config=asdict(config),
        project=config.project,
        group=config.group,
        name=config.name,
        id=str(uuid.uuid4()),
    )
    wandb.run.save()
    print(f"Training TinyBC, Env: {config.env}, Seed: {config.seed}, Dataset size: {len(states)}")
    for t in range(int(config.max_timesteps)):
        if config.fail_at and t == config.fail_at:
            raise ValueError(f"failing at step {t} as asked")
        idx = np.random.randint(0, len(states), size=config.batch_size)
        loss = ((max_action * actor(states[idx]) - actions[idx]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        wandb.log({"actor_loss": loss.item()}, step=t + 1)
        if (t + 1) % config.eval_freq == 0:
            scores = eval_actor(
                env, lambda s: max_action * actor(s), config.n_episodes, config.seed, mean, std
            )
            normalized = env.get_normalized_score(scores.mean()) * 100.0
            print(f"Time steps: {t + 1}, D4RL score: {normalized:.3f}")
            if config.checkpoints_path is not None:
                torch.save(
                    {"actor": actor.state_dict()}, os.path.join(config.checkpoints_path, f"checkpoint_{t}.pt")
                )
            wandb.log({"d4rl_normalized_score": normalized}, step=t + 1)


if __name__ == "__main__":
    train()
