// Posts the graphnetz verdicts as ONE pull-request comment, found again by its marker line and
// edited in place. Run by actions/github-script:
//
//   - graphnetz.yml, for a pull request from this repository (its token may write);
//   - graphnetz-comment.yml, on `workflow_run`, for a pull request from a fork (whose own run
//     has a read-only token): it reads the comment and the PR number from the run's artifact.
//
// The comment body is the file the plugin wrote with --graphnetz-comment (one headline, the rows
// that are not IDENTICAL, failing first, under 10,000 characters). The rules that keep the pull
// request's page truthful:
//   - the body never exceeds GitHub's 65,536 characters: a longer file is cut at a line, and
//     says so, pointing to the step summary and the artifact;
//   - a missing file still posts: "no verdicts were written" (the gate step crashed);
//   - when posting fails, the previous comment must not keep showing an older push's verdicts:
//     it is replaced by a short "stale" notice, or deleted when even that fails;
//   - a read-only token (a fork's pull request) is a warning, not an error: the workflow_run
//     workflow posts instead.
//
// Tested under node against a fake API that enforces the limit (tests/test_workflow.py).
'use strict';

const fs = require('fs');

const MARKER = '<!-- graphnetz-gates -->';
const LIMIT = 65536;   // GitHub refuses a comment body longer than this
const ROOM = 60000;    // what the verdicts may take: the marker and the run link need the rest

function verdictText(path) {
  let text;
  try {
    text = fs.readFileSync(path, 'utf8').trim();
  } catch (err) {
    return ['### graphnetz gates ✗', '',
            `**No verdicts were written** (\`${path}\`: ${err.code || err.message}): the gate ` +
            'step stopped before its summary. See the workflow run.'].join('\n');
  }
  if (text.length <= ROOM) {
    return text;
  }
  const cut = text.lastIndexOf('\n', ROOM);
  return text.slice(0, cut > 0 ? cut : ROOM) +
    `\n\n_… cut at ${ROOM} characters: the full table is in the job's step summary and in ` +
    'the `graphnetz-verdicts` artifact._';
}

function commentBody(path, runUrl) {
  return [MARKER, verdictText(path), '',
          `<sub>[workflow run: step summary and candidate reports](${runUrl})</sub>`].join('\n');
}

function staleBody(runUrl, err) {
  return [MARKER, '### graphnetz gates: stale', '',
          `The verdicts of the latest push could not be posted here (${describe(err)}), so ` +
          'this comment no longer shows any: an earlier push\'s verdicts would mislead. Read ' +
          `them in the [workflow run](${runUrl}) (step summary and the \`graphnetz-verdicts\` ` +
          'artifact).'].join('\n');
}

function describe(err) {
  return [err.status, err.message].filter(Boolean).join(' ').slice(0, 200);
}

// options: {github, context, core, path, issueNumber?, runUrl?}; returns what it did:
// 'created', 'updated', 'read-only', or throws after marking the old comment stale.
async function postComment({github, context, core, path, issueNumber, runUrl}) {
  const {owner, repo} = context.repo;
  const issue_number = Number(issueNumber ?? context.issue.number);
  if (!Number.isInteger(issue_number) || issue_number <= 0) {
    throw new Error(`graphnetz: no pull-request number to comment on (got ${issueNumber})`);
  }
  const run = runUrl ?? `${context.serverUrl}/${owner}/${repo}/actions/runs/${context.runId}`;
  const body = commentBody(path, run);
  if (body.length > LIMIT) {   // cannot happen with ROOM; a guard, not a policy
    throw new Error(`graphnetz: comment body of ${body.length} characters`);
  }
  const comments = await github.paginate(github.rest.issues.listComments,
                                         {owner, repo, issue_number});
  // Only a bot's comment is ours: a reviewer quoting the marker is never edited.
  const previous = comments.find(c => c.user && c.user.type === 'Bot' && c.body &&
                                      c.body.startsWith(MARKER));
  try {
    if (previous) {
      await github.rest.issues.updateComment({owner, repo, comment_id: previous.id, body});
      return 'updated';
    }
    await github.rest.issues.createComment({owner, repo, issue_number, body});
    return 'created';
  } catch (err) {
    if (err.status === 403) {
      core.warning('graphnetz: the token cannot write comments (a pull request from a fork?); ' +
                   'the graphnetz-comment workflow posts the verdicts from the artifact');
      return 'read-only';
    }
    if (previous) {
      try {
        await github.rest.issues.updateComment({owner, repo, comment_id: previous.id,
                                                body: staleBody(run, err)});
      } catch (staleErr) {
        try {
          await github.rest.issues.deleteComment({owner, repo, comment_id: previous.id});
        } catch (deleteErr) {
          core.warning('graphnetz: the previous verdict comment could be neither marked stale ' +
                       `nor deleted (${describe(deleteErr)})`);
        }
      }
    }
    throw err;
  }
}

module.exports = postComment;
module.exports.MARKER = MARKER;
module.exports.LIMIT = LIMIT;
