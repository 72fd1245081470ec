"""Everything tests share: fixtures, real local servers and launchers (test modules import
only from here and from conftest.py, never from each other).

* ``toymodel``: the one toy ARPA and keyword list, with hand-computed perplexities;
* ``localweb``, ``imagesite``, ``hostile``, ``archives``: sites, images and archives;
* ``crawl`` (+ ``run_crawl``, ``killswitch``): real Scrapy crawls, in this process on a
  session-wide reactor thread, or as processes (kills, signals);
* ``runfiles``, ``runfixture``: read a run directory back, write a small one;
* ``crawler``: an in-process Scrapy crawler with the project's settings for unit tests;
* ``processes``: a process's descendants from ``/proc`` (orphan checks);
* ``redisserver``, ``scrapydserver``, ``annotate``, ``net``: real servers on 127.0.0.1;
* ``testweb_pool``: a small text pool for the offline test web.
"""
