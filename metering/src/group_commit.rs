//! Group commit: requests hand their work to a few writer tasks, which take everything
//! queued at that moment and write it together — one transaction, one set of statements
//! and one commit for the whole group. Under light load a group is one request (no added
//! wait); under load the groups grow and the per-request cost of round trips and commit
//! flushes falls. Every request still gets its own answer, exactly as if it had come
//! alone.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc, oneshot};

/// Requests waiting for a writer before new requests wait for room.
const QUEUE: usize = 4096;

struct Job<S, A> {
    work: S,
    answer: oneshot::Sender<A>,
}

/// The handle requests submit their work through.
pub struct GroupCommit<S, A> {
    jobs: mpsc::Sender<Job<S, A>>,
}

impl<S, A> Clone for GroupCommit<S, A> {
    fn clone(&self) -> Self {
        Self {
            jobs: self.jobs.clone(),
        }
    }
}

/// How a group is bounded: at most `max_weight` in all (a heavier request goes alone),
/// each request weighing what `weight` says.
pub struct Bound<S> {
    pub max_weight: usize,
    pub weight: fn(&S) -> usize,
}

impl<S> Clone for Bound<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Bound<S> {}

impl<S: Send + 'static, A: Send + 'static> GroupCommit<S, A> {
    /// Starts `writers` tasks, each writing one group at a time with `write`, which
    /// answers every request of the group, in order.
    pub fn spawn<W, F>(writers: usize, bound: Bound<S>, write: W) -> Self
    where
        W: Fn(Vec<S>) -> F + Send + Sync + 'static,
        F: Future<Output = Vec<A>> + Send,
    {
        let (jobs, queue) = mpsc::channel::<Job<S, A>>(QUEUE);
        let queue = Arc::new(Mutex::new(Queue {
            jobs: queue,
            held: None,
        }));
        let write = Arc::new(write);
        for _ in 0..writers.max(1) {
            let (queue, write) = (queue.clone(), write.clone());
            tokio::spawn(async move {
                while let Some(group) = next_group(&queue, bound).await {
                    let (work, answers): (Vec<S>, Vec<_>) =
                        group.into_iter().map(|job| (job.work, job.answer)).unzip();
                    for (answer, result) in answers.into_iter().zip(write(work).await) {
                        // The request may have gone (client timeout): its work is written
                        // all the same, and a retry is answered as a repeat.
                        let _ = answer.send(result);
                    }
                }
            });
        }
        Self { jobs }
    }

    /// Hands `work` to a writer; its answer once written, or `None` when the writers have
    /// stopped.
    pub async fn submit(&self, work: S) -> Option<A> {
        let (answer, answered) = oneshot::channel();
        self.jobs.send(Job { work, answer }).await.ok()?;
        answered.await.ok()
    }
}

/// The queue, and the request taken from it that did not fit the last group (it starts
/// the next).
struct Queue<S, A> {
    jobs: mpsc::Receiver<Job<S, A>>,
    held: Option<Job<S, A>>,
}

/// Waits for a request, then takes those queued behind it while the group stays within
/// `bound`. `None` once every handle is gone.
async fn next_group<S, A>(queue: &Mutex<Queue<S, A>>, bound: Bound<S>) -> Option<Vec<Job<S, A>>> {
    let mut queue = queue.lock().await;
    let first = match queue.held.take() {
        Some(job) => job,
        None => queue.jobs.recv().await?,
    };
    let mut weight = (bound.weight)(&first.work);
    let mut group = vec![first];
    while let Ok(job) = queue.jobs.try_recv() {
        let more = (bound.weight)(&job.work);
        if weight + more > bound.max_weight {
            queue.held = Some(job);
            break;
        }
        weight += more;
        group.push(job);
    }
    Some(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_request_gets_its_own_answer_and_groups_stay_within_their_bound() {
        let groups = Arc::new(std::sync::Mutex::new(Vec::<Vec<usize>>::new()));
        let seen = groups.clone();
        let commit = GroupCommit::spawn(
            1,
            Bound {
                max_weight: 10,
                weight: |n: &usize| *n,
            },
            move |work: Vec<usize>| {
                seen.lock().unwrap().push(work.clone());
                async move {
                    // While a group is written, the other requests queue up.
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    work.iter().map(|n| n * 2).collect::<Vec<_>>()
                }
            },
        );
        let asks: Vec<usize> = (1..=20).map(|i| i % 7).collect();
        let pending: Vec<_> = asks
            .iter()
            .map(|&n| {
                let commit = commit.clone();
                tokio::spawn(async move { commit.submit(n).await })
            })
            .collect();
        for (ask, task) in asks.iter().zip(pending) {
            assert_eq!(task.await.unwrap(), Some(ask * 2));
        }
        let groups = groups.lock().unwrap();
        assert_eq!(groups.iter().flatten().count(), asks.len());
        assert!(
            groups
                .iter()
                .all(|g| g.len() == 1 || g.iter().sum::<usize>() <= 10),
            "{groups:?}"
        );
        assert!(groups.iter().any(|g| g.len() > 1), "{groups:?}");
    }
}
